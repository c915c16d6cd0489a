"""What lava-dl's netx and Lava make of a netx file's weights, and spikeport's weight format for them.

netx files carry integer weights without an exponent. lava-dl 0.6's loader rescales a dense layer's weights
(``optimize_weight_bits``: scale bits, weight exponent, number of weight bits) and Lava's ``Dense`` then clips and
truncates them with its own sign mode: :func:`netx_dense_weights` computes the integers that are really applied, so
that the importer (``netx/read.py``) and the exporter (``netx/write.py``) agree with lava-dl bit for bit.
:func:`mantissa_exponent` writes such integers in spikeport's weight format (an 8-bit mantissa times 2**e).

numpy + h5py only.
"""

from __future__ import annotations

import h5py
import numpy as np
import numpy.typing as npt

from spikeport import fixedpoint as fx
from spikeport.errors import ConversionError


def netx_dense_weight(weight: npt.ArrayLike) -> np.ndarray:
    """The integer weights lava-dl netx + Lava ``Dense`` (fixed_pt) really apply to binary spikes, for a
    ``weight`` dataset of a netx dense layer: netx ``optimize_weight_bits`` (scale bits, weight exponent,
    number of weight bits) followed by Lava's ``clip_weights`` / ``truncate_weights`` with the sign mode
    Lava itself determines. Raises ValueError where no per-synapse integer weight exists."""
    return netx_dense_weights(weight)[0]


def netx_dense_weights(*parts: npt.ArrayLike) -> list[np.ndarray]:
    """:func:`netx_dense_weight` for weight matrices [out, in_k] that netx optimizes together, each applied by its
    own Lava ``Dense``: a ``dense_rec`` layer's ``weight`` and ``weight_rec`` (``create_dense`` runs
    ``optimize_weight_bits`` on ``[weight | weight_rec]``: one scale, exponent and number of bits; Lava truncates
    each synapse's matrix with its own sign mode)."""
    ws = [np.asarray(p).astype(np.int64) for p in parts]
    w = np.hstack(ws)
    if not w.any():
        return ws
    if (w.max() > 254 and w.min() < 0) or (w.min() < -256 and w.max() > 0):
        w = np.clip(w, -256, 254)  # netx prints a warning and clips
    wmax, wmin = int(w.max()), int(w.min())
    if wmax < 0:
        signed, scale = 0, -256 / wmin
    elif wmin >= 0:
        signed, scale = 0, 255 / wmax
    else:
        signed, scale = 1, min(127 / wmax, -128 / wmin)
    scale_bits = int(np.floor(np.log2(scale))) + signed
    if scale_bits < 0:
        raise ValueError(f"weights up to {max(wmax, -wmin)} exceed netx's 8-bit range")
    n = 8
    while n > 0 and np.any(w % (1 << n)):
        n -= 1
    num_weight_bits = 8 - scale_bits - (n - signed)
    out = []
    for part in np.split(w, np.cumsum([x.shape[1] for x in ws])[:-1], axis=1):
        scaled = part << scale_bits
        # Lava Dense (PyDenseModelBitAcc): its own sign mode, clip to 8 bits, drop the low bits
        mode = "excitatory" if scaled.min() >= 0 else "inhibitory" if scaled.max() <= 0 else "mixed"
        mixed = int(mode == "mixed")
        x = -scaled if mode == "inhibitory" else scaled
        x = np.clip(x, -256 * mixed, 255)
        drop = 8 - num_weight_bits + mixed
        x = (x >> drop) << drop
        x = -x if mode == "inhibitory" else x
        if np.any(x % (1 << scale_bits)):
            raise ValueError("netx's rescaled weights are not integers after Lava's truncation")
        out.append(x >> scale_bits)  # weight_exp = -scale_bits, exact per synapse
    return out


def mantissa_exponent(w: np.ndarray, where: str) -> tuple[np.ndarray, int]:
    """Integer weights -> (8-bit mantissa, exponent >= 0) with ``mant << exp == w``, or ConversionError."""
    w = np.asarray(w, np.int64)
    for e in range(17):
        if np.all(w % (1 << e) == 0) and w.min() >> e >= fx.WEIGHT_MIN and w.max() >> e <= fx.WEIGHT_MAX:
            return (w >> e).astype(np.int32), e
        if np.any(w % (1 << (e + 1))):
            break
    raise ConversionError(
        f"{where}: weights in [{w.min()}, {w.max()}] are not an 8-bit mantissa times 2**e (spikeport's weight format)"
    )


def netx_dense_layer_weights(g: h5py.Group, weight: str = "weight") -> list[np.ndarray]:
    """The integers of a dense layer's ``weight`` [out, in] (and ``weight_rec`` [out, out] of a dense_rec layer,
    optimized together: :func:`netx_dense_weights`) as lava-dl's netx and Lava apply them."""
    out = int(np.prod(g["shape"][()]))
    parts = [np.asarray(g[weight][()]).reshape(out, -1)]
    if "weight_rec" in g:
        rec = np.asarray(g["weight_rec"][()])
        if rec.size != out * out:
            raise ValueError(f"'weight_rec' holds {rec.size} weights, expected {out} x {out} (one per neuron pair)")
        parts.append(rec.reshape(out, out))
    return netx_dense_weights(*parts)
