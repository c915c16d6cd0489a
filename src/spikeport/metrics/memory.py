"""Analytic inference memory of a Spikformer, per module, at a given precision.

Two views, both per module (stem, each block's attention and MLP, head):

* **held state** (what the deployed network must keep while it runs, the O(d^2) vs O(kd) argument):
  weights, neuron state (LIF membrane potentials) and attention state, from the model config's
  ``attention_spec``. Attention state per core:
    ssa        Q, K, V spikes of all N tokens (K^T V needs every token before Q can use it) + K^T V
    causal     the running sum S (d_h x d_h per head) + the LRF window of V (when the spec has the LRF)
    dendritic  the dendritic potentials X (k x d) + the LRF window of V (when the spec has the LRF)
  The LRF term is a non-causal dilated 3x3 conv over the token grid, so a token-streaming run must keep
  the V spikes of 2 d_max (W + 1) + 1 tokens (d_max the largest dilation, W the grid width).
* **activations** of a layer-by-layer run (torch multi-step: each module processes all T steps before the
  next one runs, tensors freed after their last use): not computed here. ``breakdown`` takes them as an
  ``ActivationView``, which baselines/activation_trace.py traces from the real model's forward
  (``baselines.torch_memory.memory_breakdown`` puts the two together). This view is what
  ``torch_memory.measure`` measures.

Precisions: ``fp32``/``fp16``/``bf16`` (torch float: spikes stored as floats, one state variable v per
LIF) and ``loihi`` (8-bit weights, 24-bit state, LIF u and v, 16-bit K^T V, 1-bit spikes; activations are
spike messages in flight, not stored, so the activation view does not apply to it).

The model config is duck-typed (a train.model_config.ModelConfig): this module imports neither torch nor train.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from spikeport import counting as C
from spikeport.errors import ConfigError, unknown_choice
from spikeport.model_shape import ModelShape

SCHEMA = "spikeport.memory"
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Precision:
    name: str
    weight_bits: int  # stored weights (conv / linear kernels)
    param_bits: int  # biases, BN parameters and buffers, dendritic A / Gamma / C
    state_bits: int  # one neuron or dendritic state variable
    spike_bits: int  # one stored spike
    act_bits: int  # real / integer activations (conv outputs, residual sums, attention products)
    kv_bits: int  # an entry of K^T V or of the causal running sum
    lif_vars: int  # state variables per LIF neuron (torch: v; Loihi CUBA: u and v)
    bn_folded: bool  # BN folded into weights and thresholds (no BN parameters kept)


PRECISIONS = {
    "fp32": Precision("fp32", 32, 32, 32, 32, 32, 32, 1, False),
    "fp16": Precision("fp16", 16, 16, 16, 16, 16, 16, 1, False),
    "bf16": Precision("bf16", 16, 16, 16, 16, 16, 16, 1, False),
    "loihi": Precision("loihi", 8, 24, 24, 1, 24, 16, 2, True),
}


class ActivationView(Protocol):
    """Live bytes of a layer-by-layer forward per scope (a module, or ``block.i.attn.core``)."""

    peak_module: str
    module_peak: dict[str, int]  # live bytes at the scope's peak
    working: dict[str, int]  # peak above the level at the scope's entry (its working set)
    at_peak: list[tuple[str, int]]  # (tensor, bytes) live at the global peak, largest first
    description: str  # how it was obtained (one line, goes into the notes)


def _bytes(elements: int, bits: int) -> int:
    return (elements * bits + 7) // 8


def stem_stages(cfg: ModelShape) -> list[dict[str, int]]:
    """Each SPS conv stage: in/out channels, conv output side, side after the optional max-pool."""
    d = cfg.embed_dim
    chans = [cfg.in_channels, d // 8, d // 4, d // 2, d]
    side, stages = cfg.img_size, []
    for i in range(4):
        pooled = (side - 1) // 2 + 1 if i in cfg.pool_stages else side
        stages.append({"c_in": chans[i], "c_out": chans[i + 1], "side": side, "pooled": pooled})
        side = pooled
    return stages


@dataclass
class ModuleMemory:
    name: str
    weights: int = 0  # bytes of parameters (+ BN buffers when not folded)
    neuron_state: int = 0  # LIF state, per inference (batch included, not x T: state is overwritten)
    attention_core: int = 0  # K^T V / running sum S / dendritic X
    attention_buffers: int = 0  # Q, K, V of all tokens (ssa) or the LRF window of V (recurrent forms)
    activation_peak: int | None = None  # layer-by-layer run: live bytes at this module's peak (None: n/a)
    working_set: int | None = None  # layer-by-layer run: peak bytes above the level at module entry
    core_working_set: int | None = None  # the same for the attention core alone (SSA.mix)

    @property
    def attention_state(self) -> int:
        return self.attention_core + self.attention_buffers

    @property
    def held(self) -> int:
        return self.weights + self.neuron_state + self.attention_state


@dataclass
class MemoryBreakdown:
    preset: str
    attention: str
    precision: str
    batch: int
    T: int
    modules: list[ModuleMemory]
    live_at_peak: list[tuple[str, int]] = field(default_factory=list)  # activation tensors at the peak
    peak_module: str | None = None
    notes: list[str] = field(default_factory=list)

    def total(self, attr: str) -> int:
        return int(sum(getattr(m, attr) or 0 for m in self.modules))

    @property
    def activation_peak(self) -> int | None:
        peaks = [m.activation_peak for m in self.modules if m.activation_peak is not None]
        return max(peaks) if peaks else None

    @property
    def inference_peak(self) -> int | None:
        """Weights + the activation peak of a layer-by-layer run (neuron states that torch keeps live
        are inside the activation trace)."""
        peak = self.activation_peak
        return None if peak is None else self.total("weights") + peak

    def to_dict(self) -> dict[str, Any]:
        mods = []
        for m in self.modules:
            d = asdict(m)
            d.update(attention_state=m.attention_state, held=m.held)
            mods.append(d)
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "method": "analytic",
            "preset": self.preset,
            "attention": self.attention,
            "precision": self.precision,
            "batch": self.batch,
            "T": self.T,
            "modules": mods,
            "totals": {k: self.total(k) for k in ("weights", "neuron_state", "attention_core", "attention_buffers")},
            "attention_state_total": sum(m.attention_state for m in self.modules),
            "activation_peak": self.activation_peak,
            "inference_peak": self.inference_peak,
            "peak_module": self.peak_module,
            "live_at_peak": [list(x) for x in self.live_at_peak],
            "notes": self.notes,
        }


def lrf_window_tokens(cfg: ModelShape) -> int:
    """Tokens of V a token-streaming run keeps for the LRF term: 2 d_max (W + 1) + 1, at most N."""
    if not cfg.lrf_dilations:
        return 0
    w = cfg.grid[1]
    return min(cfg.num_tokens, 2 * max(cfg.lrf_dilations) * (w + 1) + 1)


# ---- weights -------------------------------------------------------------------------------------


def _weights(cfg: ModelShape, p: Precision) -> dict[str, int]:
    """Bytes of parameters per module. Torch keeps BN weight, bias, running mean and var (+ an int64
    counter); on Loihi BN is folded into the weights and one bias per output channel remains."""

    def affine(c_in: int, c_out: int, kernel: int = 1, has_bias: bool = False, has_bn: bool = True) -> int:
        total = _bytes(kernel * c_in * c_out, p.weight_bits)
        if has_bias or (p.bn_folded and has_bn):  # a folded BN merges into one bias
            total += _bytes(c_out, p.param_bits)
        if has_bn and not p.bn_folded:
            total += _bytes(4 * c_out, p.param_bits) + 8
        return total

    d, hid, spec = cfg.embed_dim, int(cfg.embed_dim * cfg.mlp_ratio), cfg.attention_spec
    out = {"stem": sum(affine(s["c_in"], s["c_out"], 9) for s in stem_stages(cfg)) + affine(d, d, 9)}
    qkv_bias = cfg.layout == "linear"  # official CIFAR code: Linear with bias; ImageNet: Conv1d without
    for i in range(cfg.depth):
        attn = 3 * affine(d, d, has_bias=qkv_bias) + affine(d, d, has_bias=True)
        if not p.bn_folded:  # the official blocks' unused norm1 / norm2 LayerNorms, still allocated
            attn += 2 * _bytes(2 * d, p.param_bits)
        if spec.lrf:
            attn += len(cfg.lrf_dilations) * _bytes(9 * d, p.weight_bits)  # depthwise, no bias
        if spec.core == "dendritic":
            h, k = cfg.num_heads, spec.dendrites
            attn += _bytes(C.dendritic_params(h, k), p.param_bits)  # decay, Gamma, C, coupling
        out[f"block.{i}.attn"] = attn
        if cfg.mlp:
            out[f"block.{i}.mlp"] = affine(d, hid, has_bias=True) + affine(hid, d, has_bias=True)
    out["head"] = affine(d, cfg.num_classes, has_bias=True, has_bn=False)
    return out


# ---- held state ----------------------------------------------------------------------------------


def _state(cfg: ModelShape, p: Precision, batch: int) -> tuple[dict[str, int], dict[str, tuple[int, int]]]:
    """(neuron state bytes per module, (attention core, attention buffers) bytes per block)."""

    def lif(neurons: int) -> int:
        return _bytes(neurons * p.lif_vars, p.state_bits) * batch

    d, n, hid = cfg.embed_dim, cfg.num_tokens, int(cfg.embed_dim * cfg.mlp_ratio)
    h, spec = cfg.num_heads, cfg.attention_spec
    neurons = {"stem": sum(lif(s["c_out"] * s["side"] ** 2) for s in stem_stages(cfg)) + lif(d * n)}
    if spec.core == "dendritic" and p.name == "loihi":  # chip-native: the recursion is a token kernel
        core = 0  # (weights), nothing is held between steps (docs/lowering.md)
    elif spec.core == "dendritic":  # token streaming on a GPU: X, k x d dendritic potentials
        core = _bytes(C.dendritic_state_entries(d, spec.dendrites), p.state_bits) * batch
    elif p.name == "loihi" and C.token_grid((n,)) is not None:  # chip-native: recounted from each step's spikes
        core = 0
    else:  # K^T V or the running sum S: d_h x d_h per head
        core = _bytes(C.kv_state_entries(d, h), p.kv_bits) * batch
    if not spec.causal:  # K^T V needs Q, K, V of every token first
        buffers = _bytes(3 * n * d, p.spike_bits) * batch
    else:  # token streaming: only the LRF window of V
        buffers = _bytes(lrf_window_tokens(cfg) * d, p.spike_bits) * batch if spec.lrf else 0
    attention = {}
    for i in range(cfg.depth):
        neurons[f"block.{i}.attn"] = lif(5 * n * d)  # q, k, v, attn, proj LIF groups
        if cfg.mlp:
            neurons[f"block.{i}.mlp"] = lif(n * hid) + lif(n * d)
        attention[f"block.{i}.attn"] = (core, buffers)
    neurons["head"] = 0
    return neurons, attention


# ---- the breakdown -------------------------------------------------------------------------------


def breakdown(
    cfg: ModelShape,
    precision: str = "fp32",
    batch: int = 1,
    *,
    name: str = "custom",
    activations: ActivationView | None = None,
) -> MemoryBreakdown:
    """Per-module bytes of the Spikformer ``cfg`` at ``precision``; the activation columns come from
    ``activations`` (None: not computed, as for ``loihi``)."""
    if precision not in PRECISIONS:
        raise unknown_choice("precision", precision, PRECISIONS)
    if batch < 1:
        raise ConfigError(f"batch must be >= 1, got {batch}")
    p = PRECISIONS[precision]
    weights = _weights(cfg, p)
    neurons, attention = _state(cfg, p, batch)
    trace = activations
    modules = []
    for mod, w in weights.items():
        core, buffers = attention.get(mod, (0, 0))
        peak = None if trace is None else trace.module_peak.get(mod, 0)
        ws = None if trace is None else trace.working.get(mod, 0)
        cws = None if trace is None or mod not in attention else trace.working.get(f"{mod}.core", 0)
        modules.append(ModuleMemory(mod, w, neurons.get(mod, 0), core, buffers, peak, ws, cws))
    notes = [
        f"batch {batch}, T {cfg.T}, {p.name}: weights {p.weight_bits}-bit, state {p.state_bits}-bit x "
        f"{p.lif_vars} per LIF neuron, spikes {p.spike_bits}-bit",
        "neuron and attention state are per inference (overwritten every time step, not x T)",
    ]
    if trace is not None:
        notes.append(trace.description)
    elif precision == "loihi":
        notes.append(
            "loihi: activations are spike messages in flight between cores, not stored: no "
            "activation peak; held state = weights + neuron state + attention state"
        )
    else:
        notes.append("activations not computed (baselines.torch_memory.memory_breakdown traces them)")
    return MemoryBreakdown(
        name,
        cfg.attention,
        precision,
        batch,
        cfg.T,
        modules,
        [] if trace is None else list(trace.at_peak[:8]),
        None if trace is None else trace.peak_module,
        notes,
    )
