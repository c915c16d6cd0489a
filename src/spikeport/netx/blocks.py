"""One lava-dl netx *block* as a one-layer netx file, so that a block's Loihi ground truth can be replayed
through spikeport's importer and executors.

lava-dl tests its netx blocks (``lava.lib.dl.netx.blocks.process``: Dense, Conv, Input) without a .net file:
the test builds the block from arrays and Lava neuron parameters (``vth``, ``du``, ``dv``, ``bias_exp`` for
LIF; ``vth``, ``spike_exp``, ``state_exp`` for SigmaDelta). :func:`write_block_netx` writes the same block in
the layout slayer's ``export_hdf5`` writes (``layer/0/{type, shape, weight, bias, neuron/...}``), mapped the
way netx's own loader maps files back to blocks (netx/hdf5.py ``get_neuron_params``, ``create_conv``):

- CUBA neuron: ``vThMant = vth``, ``iDecay = du + 1``, ``vDecay = dv``; netx hard-codes ``bias_exp = 6``,
  so a block with another ``bias_exp`` has no netx file (ValueError).
- SDNN neuron: ``vThMant = vth``; netx hard-codes ``spike_exp = state_exp = 6``; ``sigma_output`` makes it
  a Sigma decoder.
- conv weights: a Lava Conv kernel ``(out, x, y, in)`` is stored as netx expects a torch kernel
  ``(out, in, H, W)``, flipped: netx applies ``w[:, :, ::-1, ::-1].transpose(0, 3, 2, 1)``, undone here.
- shapes are lava-dl's ``(x, y, f)`` = (W, H, C); the file holds torch's ``[C, H, W]``.

numpy + h5py only, like the importer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import numpy.typing as npt

from spikeport.netx.neurons import NETX_BIAS_EXP, NETX_SPIKE_EXP, NETX_STATE_EXP


def lif_neuron(vth: int, du: int, dv: int, bias_exp: int = NETX_BIAS_EXP) -> dict[str, Any]:
    """netx CUBA neuron fields of a Lava LIF block neuron (``neuron_params`` of a lava-dl block test)."""
    if bias_exp != NETX_BIAS_EXP:
        raise ValueError(
            f"netx fixes bias_exp at {NETX_BIAS_EXP}; a LIF block with bias_exp {bias_exp} has no netx file"
        )
    if not 0 <= du <= 4095 or not 0 <= dv <= 4095:
        raise ValueError(f"du {du} / dv {dv} outside Lava LIF's 12-bit range 0..4095")
    return {"type": "CUBA", "iDecay": du + 1, "vDecay": dv, "vThMant": vth, "refDelay": 1, "gradedSpike": 0}


def sdnn_neuron(
    vth: int = 0, spike_exp: int = NETX_SPIKE_EXP, state_exp: int = NETX_STATE_EXP, sigma_output: bool = False
) -> dict[str, Any]:
    """netx SDNN neuron fields of a Lava SigmaDelta (or, ``sigma_output``, Sigma) block neuron."""
    if (spike_exp, state_exp) != (NETX_SPIKE_EXP, NETX_STATE_EXP):
        raise ValueError(
            f"netx fixes spike_exp = state_exp = 6; a block with spike_exp {spike_exp}, state_exp {state_exp} "
            "has no netx file"
        )
    fields: dict[str, Any] = {"type": "SDNN", "vThMant": vth}
    if sigma_output:
        fields["sigma_output"] = 1
    return fields


def rf_neuron(
    vth: float, period: float, alpha: float, iz: bool, state_exp: int = 6, decay_bits: int = 12
) -> dict[str, Any]:
    """netx RF neuron fields of a Lava RF (``iz`` False: type RF_PHASE) or RF_IZ (type RF) block neuron: slayer's
    device parameters ``sinDecay`` / ``cosDecay`` = (1 - alpha) * sin|cos(2 pi / period) * 2**12, ``vThMant`` =
    vth (Lava scales it by 2**state_exp)."""
    if (state_exp, decay_bits) != (6, 12):
        raise ValueError(f"netx fixes state_exp 6 and decay_bits 12 for RF neurons, got {state_exp}, {decay_bits}")
    return {
        "type": "RF" if iz else "RF_PHASE",
        "sinDecay": (1 - alpha) * np.sin(2 * np.pi / period) * (1 << decay_bits),
        "cosDecay": (1 - alpha) * np.cos(2 * np.pi / period) * (1 << decay_bits),
        "vThMant": vth,
        "gradedSpike": 0,
    }


def write_block_netx(
    path: str | os.PathLike[str],
    kind: str,
    weight: npt.ArrayLike,
    neuron: Mapping[str, Any],
    bias: npt.ArrayLike | None = None,
    shape: Sequence[int] | None = None,
    stride: int = 1,
    padding: int = 0,
    dilation: int = 1,
    groups: int = 1,
    weight_imag: npt.ArrayLike | None = None,
) -> Path:
    """Write a one-layer netx file of a lava-dl ``Dense`` or ``Conv`` block and return its path.

    ``weight``: what the block takes (dense ``(out, in)``; conv: Lava's ``(out, x, y, in)``). ``shape``: the
    block's output shape in lava-dl's ``(x, y, f)`` order (conv; dense: ``(out,)``, the default). ``neuron``:
    :func:`lif_neuron`, :func:`sdnn_neuron` or :func:`rf_neuron`. ``bias``: per output channel, as the block's
    ``bias``. ``weight_imag``: a ComplexDense block's imaginary weights (``weight`` is then the real part)."""
    w = np.asarray(weight)
    if kind == "dense":
        if w.ndim != 2:
            raise ValueError(f"dense weight of shape {w.shape}, expected (out, in)")
        file_w, file_shape = w, [int(w.shape[0])]
    elif kind == "conv":
        if w.ndim != 4 or shape is None or len(shape) != 3:
            raise ValueError(f"conv needs a (out, x, y, in) kernel and an (x, y, f) shape, got {w.shape} and {shape}")
        file_w = np.ascontiguousarray(w.transpose(0, 3, 2, 1)[:, :, ::-1, ::-1])
        x, y, f_ = (int(s) for s in shape)
        file_shape = [f_, y, x]
    else:
        raise ValueError(f"block kind {kind!r}: 'dense' or 'conv'")
    path = Path(path)
    with h5py.File(path, "w") as f:
        g = f.create_group("layer/0")
        g["type"] = np.array([kind.encode()])
        g["shape"] = np.array(file_shape)
        if weight_imag is None:
            g["weight"] = file_w.astype(np.float32)
        else:
            if kind != "dense" or np.shape(weight_imag) != w.shape:
                raise ValueError("complex weights need a dense block with real and imaginary weights of one shape")
            g["weight/real"] = file_w.astype(np.float32)
            g["weight/imag"] = np.asarray(weight_imag).astype(np.float32)
        if bias is not None:
            g["bias"] = np.asarray(bias).astype(np.float32)
        if kind == "conv":
            for key, value in (("stride", stride), ("padding", padding), ("dilation", dilation)):
                g[key] = np.array([value, value])
            g["groups"] = np.array([groups])
        for key, value in neuron.items():
            g[f"neuron/{key}"] = np.array([value.encode()]) if isinstance(value, str) else np.array([value])
    return path
