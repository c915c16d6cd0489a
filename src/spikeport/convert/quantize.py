"""Quantization to Loihi 2 fixed point: plan the scales, then turn float parameters into integers.

Each LIF group gets a power-of-two scale sigma = 2**s: its membrane potential in Loihi units is
``v_int = 64 * sigma * v_float`` (64: Loihi's 6-bit MSB alignment of a_in and vth). Then

    threshold    vth       = round(sigma * v_threshold)                   (exact: sigma and 0.5 are powers of 2)
    bias         bias_mant << bias_exp = 64 * sigma * b / tau
    conv/dense   weight_mant << weight_exp = sigma * in_scale * W / tau     (in_scale = 2**-frac_bits for pixels)
    attention    out_mant << out_exp = sigma * s / tau
    dendritic    out_mant << out_exp = sigma * s / tau / xi, state X_int = xi * X

s is the largest value that keeps every conv/dense path's largest mantissa >= 64 (full 8-bit use),
capped so that vth fits 17 bits and, with calibration statistics, the largest synaptic input stays
below 2**16 (half of the 2**17 that would wrap the 24-bit current u). Synapses that read integer
(residual-sum) inputs never get a negative exponent, so a Dense reading x1 + x2 equals the sum of two
Dense connections on x1 and x2 bit for bit (that is how the Lava backend realises residual adds); nor do
spike-driven convs, because Lava's CPU Conv model applies no exponent (weights are pre-scaled instead).
The plan lives in node attributes; ``apply`` computes integers from floats with any ``ops`` backend, so
the fake-quant executor re-quantizes trainable float weights with the same code (QAT).
"""
from __future__ import annotations

import math

import numpy as np

from spikeport import fixedpoint as fx
from spikeport.errors import ConversionError
from spikeport.ir.graph import Graph

DENDRITIC_SHIFT = 12
ACT_TARGET = 2 ** 16                 # calibrated |a_in| target: half of the wrap limit 2**17
STATE_TARGET = 2 ** 21               # dendritic |X_int| bound target (24-bit state, margin 4x)
DEFAULT_INPUT_RANGE = 4.0            # |pixel| after normalization when no data are given
INPUT_BITS = 16                      # pixels enter as 16-bit graded spikes: 8 bits cost ~1 pp on digits


def _ceil_log2(x: float) -> int:
    return math.ceil(math.log2(x)) if x > 0 else 0


def _floor_log2(x: float) -> int:
    return math.floor(math.log2(x)) if x > 0 else 0


def mantissa_exp(value: float, bits: int = 8) -> tuple[int, int]:
    """value ~ mant * 2**exp with mant in [2**(bits-2), 2**(bits-1) - 1] (or 0)."""
    if value == 0:
        return 0, 0
    exp = _ceil_log2(abs(value) / (2 ** (bits - 1) - 1))
    mant = int(round(value / 2.0 ** exp))
    if abs(mant) > 2 ** (bits - 1) - 1:
        exp += 1
        mant = int(round(value / 2.0 ** exp))
    return mant, exp


def plan(graph: Graph, stats: dict | None = None, input_range: float | None = None,
         input_bits: int = INPUT_BITS) -> Graph:
    """Choose frac_bits, sigma exponents, weight exponents and shifts (node attrs). ``stats`` maps a lif
    node name to the calibrated max |input| (pre-neuron, before 1/tau) over data."""
    stats = stats or {}
    inp = graph.nodes["input"]
    rng = input_range or DEFAULT_INPUT_RANGE
    inp.attrs["bits"] = int(input_bits)
    inp.attrs["frac_bits"] = max(-8, min(24, _floor_log2((2 ** (input_bits - 1) - 1) / rng)))
    for node in graph.by_op("dendritic"):
        _plan_dendritic(graph, node)
    for lif in graph.by_op("lif"):
        _plan_lif(graph, lif, stats.get(lif.name))
    for node in graph.by_op("readout"):
        w = np.abs(node.params["weight"]).max()
        node.attrs["weight_exp"] = 0
        node.attrs["gain"] = float(2.0 ** _floor_log2(127 / w)) if w > 0 else 1.0   # power of 2: exact scaling
        node.attrs["tokens"] = int(np.prod(graph.nodes[node.inputs[0]].shape[:-1]))
    graph.meta["quantization_plan"] = {"input_range": rng, "calibrated": bool(stats)}
    return graph


def in_scale_exp(graph: Graph, node) -> int:
    src = graph.nodes[node.inputs[0]]
    return -src.attrs["frac_bits"] if src.op == "input" else 0


def _plan_lif(graph: Graph, lif, calibrated_max: float | None) -> None:
    paths = graph.inputs_of(lif)
    theta, tau = lif.attrs["v_threshold"], lif.attrs["tau"]
    magnitudes = [float(np.abs(p.params["weight"]).max()) * 2.0 ** in_scale_exp(graph, p)
                  for p in paths if p.op in ("conv", "dense")]
    s = _ceil_log2(64 / min(magnitudes)) if magnitudes and min(magnitudes) > 0 else 8
    cap = _floor_log2(fx.VTH_MAX / theta)
    bias_max = float(np.abs(lif.params["bias"]).max(initial=0.0))
    if bias_max > 0:                      # the bias must fit 13-bit mantissa << 7: 64 sigma |b| <= 4095 * 2**7
        cap = min(cap, _floor_log2(fx.BIAS_MANT_MAX * 2 ** fx.BIAS_EXP_MAX / (64 * bias_max)))
    if calibrated_max:
        cap = min(cap, _floor_log2(ACT_TARGET * tau / calibrated_max))
    # a path that may not floor but whose best exponent is negative asks for a finer sigma instead
    shortfall = max([0] + [-weight_exponent(p.params["weight"], s + in_scale_exp(graph, p), no_floor=False)
                           for p in paths if p.op in ("conv", "dense") and _needs_exact_sum(graph, p)])
    s = min(s + shortfall, cap)
    lif.attrs["sigma_exp"] = int(s)
    lif.attrs["vth"] = int(round(2.0 ** s * theta))
    b_eff = 64 * 2.0 ** s * np.abs(lif.params["bias"]).max(initial=0.0)
    lif.attrs["bias_exp"] = int(min(fx.BIAS_EXP_MAX, max(0, _ceil_log2(b_eff / fx.BIAS_MANT_MAX))))
    for p in paths:
        if p.op in ("conv", "dense"):
            gain_exp = s + in_scale_exp(graph, p)
            e = weight_exponent(p.params["weight"], gain_exp, no_floor=_needs_exact_sum(graph, p))
            p.attrs["gain_exp"], p.attrs["weight_exp"] = int(gain_exp), int(e)
        elif p.op == "attention":
            p.attrs["out_mant"], p.attrs["out_exp"] = mantissa_exp(2.0 ** s * p.attrs["scale"])
        elif p.op == "dendritic":
            xi = 2.0 ** p.attrs["state_exp"]
            p.attrs["out_mant"], p.attrs["out_exp"] = mantissa_exp(2.0 ** s * p.attrs["scale"] / xi)


def _needs_exact_sum(graph: Graph, node) -> bool:
    """No flooring exponent where the Lava mapping must split or cannot shift the sum: synapses that read
    residual sums (one Lava connection per source), and spike-driven convs (Lava's Conv has no exponent
    on the CPU: the weights are pre-scaled by 2**weight_exp instead)."""
    src = graph.nodes[node.inputs[0]].op
    return src == "add" or (node.op == "conv" and src != "input")


def weight_exponent(w: np.ndarray, gain_exp: int, no_floor: bool) -> int:
    """The per-layer exponent with the least squared error of the 8-bit mantissas: the max-based one, or
    one or two steps finer when clipping a few outliers buys resolution for all other weights."""
    scaled = np.asarray(w, np.float64) * 2.0 ** gain_exp
    top = float(np.abs(scaled).max())
    e_max = _ceil_log2(top / fx.WEIGHT_MAX) if top > 0 else 0
    best, best_err = e_max, np.inf
    for e in (e_max, e_max - 1, e_max - 2):
        if no_floor and e < 0:
            continue
        q = np.clip(np.rint(scaled / 2.0 ** e), fx.WEIGHT_MIN, fx.WEIGHT_MAX) * 2.0 ** e
        err = float(np.sum((q - scaled) ** 2))
        if err < best_err:
            best, best_err = e, err
    return max(best, 0) if no_floor else best


def dendritic_state_bound(transition: np.ndarray, gamma: np.ndarray, n: int) -> float:
    """max_i sum_m (|A|^m |Gamma|)_i over m < n: a bound on |X| for spike inputs u in {0, 1}."""
    a, x = np.abs(transition.astype(np.float64)), np.abs(gamma.astype(np.float64))
    total = np.zeros_like(x)
    for _ in range(n):
        total += x
        x = np.einsum("hij,hj->hi", a, x)
    return float(total.max())


def _plan_dendritic(graph: Graph, node) -> None:
    n = int(np.prod(node.shape[:-1]))
    bound = dendritic_state_bound(node.params["transition"], node.params["gamma"], n)
    gmax = float(np.abs(node.params["gamma"]).max())
    xi_exp = min(_floor_log2(STATE_TARGET / bound) if bound > 0 else 0,
                 _floor_log2((2 ** 15 - 1) / gmax) if gmax > 0 else 0)
    cmax = float(np.abs(node.params["readout"]).max())
    node.attrs["state_exp"] = int(xi_exp)
    node.attrs["a_shift"] = DENDRITIC_SHIFT
    node.attrs["c_shift"] = int(max(0, min(16, _floor_log2((2 ** 15 - 1) / cmax)))) if cmax > 0 else 0


def apply(graph: Graph, ops=fx.INT, params: dict | None = None) -> dict[str, dict]:
    """Integer parameters of every node from its float ones and the plan: {node: {qname: array}}.

    ``params`` overrides the float parameters (the fake-quant executor passes trainable tensors)."""
    out: dict[str, dict] = {}
    for node in graph.nodes.values():
        p = (params or {}).get(node.name, node.params)
        a = node.attrs
        if node.op in ("conv", "dense"):
            w = p["weight"] * 2.0 ** (a["gain_exp"] - a["weight_exp"])
            out[node.name] = {"weight_mant": ops.clip(ops.round(w), fx.WEIGHT_MIN, fx.WEIGHT_MAX)}
        elif node.op == "lif":
            b = p["bias"] * (64 * 2.0 ** (a["sigma_exp"] - a["bias_exp"]))
            out[node.name] = {"bias_mant": ops.clip(ops.round(b), fx.BIAS_MANT_MIN, fx.BIAS_MANT_MAX)}
        elif node.op == "dendritic":
            lim = 2 ** 15 - 1
            out[node.name] = {
                "a_mant": ops.clip(ops.round(p["transition"] * 2.0 ** a["a_shift"]), -lim, lim),
                "gamma_mant": ops.clip(ops.round(p["gamma"] * 2.0 ** a["state_exp"]), -lim, lim),
                "c_mant": ops.clip(ops.round(p["readout"] * 2.0 ** a["c_shift"]), -lim, lim)}
        elif node.op == "readout":
            out[node.name] = {
                "weight_mant": ops.clip(ops.round(p["weight"] * a["gain"]), fx.WEIGHT_MIN, fx.WEIGHT_MAX),
                "bias_int": ops.round(p["bias"] * a["gain"] * a["tokens"])}
    return out


def quantize(graph: Graph, stats: dict | None = None, input_range: float | None = None,
             input_bits: int = INPUT_BITS) -> Graph:
    """plan + finalize, in place."""
    if graph.quantized:
        raise ConversionError("graph is already quantized")
    return finalize(plan(graph, stats, input_range, input_bits))


def finalize(graph: Graph) -> Graph:
    """A planned float graph -> integers (in place); per-node quantization errors go to graph.meta."""
    ints = apply(graph)
    report = {}
    for name, qparams in ints.items():
        node = graph.nodes[name]
        report[name] = quantization_error(graph, node, qparams)
        node.params = {k: np.asarray(v, dtype=np.int32) for k, v in qparams.items()}
    graph.quantized = True
    graph.meta["quantization"] = report
    return graph


def quantization_error(graph: Graph, node, qparams: dict) -> dict:
    """Relative L2 error of the dequantized parameter and the number of values clipped at the range."""
    a = node.attrs
    if node.op in ("conv", "dense"):
        ref, scale, key = node.params["weight"], 2.0 ** (a["weight_exp"] - a["gain_exp"]), "weight_mant"
        lim = (fx.WEIGHT_MIN, fx.WEIGHT_MAX)
    elif node.op == "lif":
        ref, scale, key = node.params["bias"], 2.0 ** (a["bias_exp"] - a["sigma_exp"]) / 64, "bias_mant"
        lim = (fx.BIAS_MANT_MIN, fx.BIAS_MANT_MAX)
    elif node.op == "readout":
        ref, scale, key, lim = node.params["weight"], 1 / a["gain"], "weight_mant", (fx.WEIGHT_MIN, fx.WEIGHT_MAX)
    else:
        ref, scale, key = node.params["gamma"], 2.0 ** -a["state_exp"], "gamma_mant"
        lim = (-(2 ** 15 - 1), 2 ** 15 - 1)
    q = np.asarray(qparams[key], np.float64)
    denom = float(np.linalg.norm(ref)) or 1.0
    return {"param": key, "rel_error": float(np.linalg.norm(q * scale - ref) / denom),
            "saturated": int(np.sum((q <= lim[0]) | (q >= lim[1])) if q.size else 0),
            "size": int(q.size)}
