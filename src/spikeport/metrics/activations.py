"""Activation memory of a layer-by-layer (torch multi-step) Spikformer forward, simulated op by op.

Each module processes all T time steps before the next one runs (SpikingJelly's multi-step mode, our
models.py); eager torch frees a tensor after its last use, Python keeps a function's locals and the left
side of ``y = f(y)`` alive until the statement ends. ``activation_trace`` replays models.py's forward
with that rule and reports, per module and per attention core, the peak of live bytes, the peak above
the module's entry level (its working set) and the tensors live at the global peak.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:                  # memory imports this module: the annotation only
    from spikeport.metrics.memory import Precision

# extra output-sized buffers a multi-step LIF holds while it runs (see activation_trace)
LIF_SCRATCH = {"ideal": 0, "spikingjelly-cpu": 3}


def _bytes(elements: int, bits: int) -> int:
    return (elements * bits + 7) // 8


def stem_stages(cfg) -> list[dict]:
    """Each SPS conv stage: in/out channels, conv output side, side after the optional max-pool."""
    d = cfg.embed_dim
    chans = [cfg.in_channels, d // 8, d // 4, d // 2, d]
    side, stages = cfg.img_size, []
    for i in range(4):
        pooled = (side - 1) // 2 + 1 if i in cfg.pool_stages else side
        stages.append({"c_in": chans[i], "c_out": chans[i + 1], "side": side, "pooled": pooled})
        side = pooled
    return stages


class _Trace:
    """Live-tensor bookkeeping: peak bytes per scope (module, attention core), the bytes a scope holds
    above its entry level (its working set), and the tensors live at the global peak."""

    def __init__(self):
        self.live: dict[str, int] = {}
        self.cur = self.peak = 0
        self.scopes: list[str] = []
        self.module_peak: dict[str, int] = {}
        self.working: dict[str, int] = {}
        self._entry: dict[str, int] = {}
        self.at_peak: list[tuple[str, int]] = []
        self.peak_module = ""

    def enter(self, module: str) -> None:
        """Start a top-level module (ends the previous one)."""
        self.scopes = []
        self.push(module)

    def push(self, scope: str) -> None:
        self.scopes.append(scope)
        self._entry[scope] = self.cur
        self._touch()

    def pop(self) -> None:
        self.scopes.pop()

    def _touch(self) -> None:
        for sc in self.scopes:
            self.module_peak[sc] = max(self.module_peak.get(sc, 0), self.cur)
            self.working[sc] = max(self.working.get(sc, 0), self.cur - self._entry[sc])

    def alloc(self, name: str, nbytes: int) -> str:
        self.live[name] = nbytes
        self.cur += nbytes
        self._touch()
        if self.cur > self.peak:
            self.peak, self.peak_module = self.cur, self.scopes[0]
            self.at_peak = sorted(self.live.items(), key=lambda kv: -kv[1])
        return name

    def free(self, *names: str) -> None:
        for n in names:
            self.cur -= self.live.pop(n)


def activation_trace(cfg, p: Precision, batch: int, inference_form: str = "recurrent",
                     lif_scratch: int = 0) -> _Trace:
    """Simulate the torch forward of models.py op by op (eager: a tensor dies after its last use).

    Counted: every tensor an op materialises (views are free), and each LIF group's membrane v, which
    SpikingJelly keeps after the forward until ``reset_net``. Not counted: the caller's input batch and
    kernel-internal scratch of conv / matmul. ``lif_scratch``: extra output-sized buffers a LIF
    implementation holds while it runs; 0 for an ideal in-place neuron, 3 for SpikingJelly 2.0's CPU path
    (per-step spikes and states kept in two lists, then both stacked: LIF_SCRATCH["spikingjelly-cpu"])."""
    tr = _Trace()
    T, B, d, n = cfg.T, batch, cfg.embed_dim, cfg.num_tokens
    h, dh, hid = cfg.num_heads, cfg.embed_dim // cfg.num_heads, int(cfg.embed_dim * cfg.mlp_ratio)
    act = lambda elems: _bytes(elems, p.act_bits)
    spk = lambda elems: _bytes(elems, p.spike_bits)

    def lif(prefix: str, x: str, elems: int, free_input: bool) -> str:
        tr.alloc(f"{prefix}.lif.v", _bytes(B * elems, p.state_bits))   # kept until reset_net
        scratch = tr.alloc(f"{prefix}.lif.scratch", lif_scratch * spk(T * B * elems)) if lif_scratch else None
        s = tr.alloc(f"{prefix}.spikes", spk(T * B * elems))
        tr.free(*([scratch] if scratch else []), *([x] if free_input else []))
        return s

    def conv_bn_lif(prefix: str, x: str, elems: int, free_input: str = "after_lif") -> str:
        """conv/linear -> BN -> LIF; the input dies after the LIF (SPS: ``x = conv_bn_lif(x)``), after
        the BN (MLP: ``x = bn(fc(x)); x = lif(x)``) or never here (``free_input="never"``)."""
        c = tr.alloc(f"{prefix}.conv", act(T * B * elems))
        b = tr.alloc(f"{prefix}.bn", act(T * B * elems))
        tr.free(c, *([x] if free_input == "after_bn" else []))
        s = lif(prefix, b, elems, free_input=True)
        if free_input == "after_lif":
            tr.free(x)
        return s

    tr.enter("stem")
    x = tr.alloc("stem.input_repeated", act(T * B * cfg.in_channels * cfg.img_size ** 2))
    for i, s in enumerate(stem_stages(cfg)):
        x = conv_bn_lif(f"stem.stage{i}", x, s["c_out"] * s["side"] ** 2)
        if s["pooled"] != s["side"]:
            pooled = tr.alloc(f"stem.stage{i}.pool", spk(T * B * s["c_out"] * s["pooled"] ** 2))
            tr.free(x)
            x = pooled
    rpe = conv_bn_lif("stem.rpe", x, d * n, free_input="never")
    summed = tr.alloc("stem.x_plus_rpe", act(T * B * d * n))
    tr.free(x, rpe)
    x = tr.alloc("stem.tokens", act(T * B * n * d))            # flatten + transpose + contiguous
    tr.free(summed)

    for i in range(cfg.depth):
        blk = f"block.{i}"
        tr.enter(f"{blk}.attn")
        q, k, v = (conv_bn_lif(f"{blk}.attn.{c}", x, n * d, free_input="never") for c in "qkv")
        tr.push(f"{blk}.attn.core")
        y = _mix(tr, cfg, p, f"{blk}.attn", T * B, inference_form)
        tr.pop()
        a = lif(f"{blk}.attn.attn", y, n * d, free_input=True)
        o = conv_bn_lif(f"{blk}.attn.proj", a, n * d, free_input="never")
        tr.free(q, k, v, a)                                     # SSA.forward's locals die at return
        x2 = tr.alloc(f"{blk}.x_attn", act(T * B * n * d))
        tr.free(x, o)
        x = x2
        if cfg.mlp:
            tr.enter(f"{blk}.mlp")
            f1 = conv_bn_lif(f"{blk}.mlp.fc1", x, n * hid, free_input="never")
            f2 = conv_bn_lif(f"{blk}.mlp.fc2", f1, n * d, free_input="after_bn")
            x2 = tr.alloc(f"{blk}.x_mlp", act(T * B * n * d))
            tr.free(x, f2)
            x = x2
    tr.enter("head")
    m1 = tr.alloc("head.mean_tokens", act(T * B * d))
    tr.free(x)
    m0 = tr.alloc("head.mean_time", act(B * d))
    tr.free(m1)
    tr.alloc("head.logits", act(B * cfg.num_classes))
    tr.free(m0)
    return tr


def _mix(tr: _Trace, cfg, p, prefix: str, tb: int, form: str) -> str:
    """SSA.mix of models.py: the variant's core, back to tokens, scale, the local term. Python keeps a
    function's locals (u, g) and the left side of ``y = f(y)`` alive until the statement ends, which is
    what eager torch allocates."""
    h, dh, n, kd, d = cfg.num_heads, cfg.embed_dim // cfg.num_heads, cfg.num_tokens, cfg.num_dendrites, cfg.embed_dim
    act = lambda elems: _bytes(elems, p.act_bits)
    full = act(tb * n * d)
    local_vars: list[str] = []
    if cfg.attention in ("ssa", "lrf_ssa"):
        kv = tr.alloc(f"{prefix}.KtV", act(tb * h * dh * dh))
        y = tr.alloc(f"{prefix}.Q_KtV", full)
        tr.free(kv)
    elif cfg.attention == "lrf_causal" and form == "parallel":
        scores = tr.alloc(f"{prefix}.QKt_masked", act(tb * h * n * n))
        y = tr.alloc(f"{prefix}.scores_V", full)
        tr.free(scores)
    elif cfg.attention == "lrf_causal":
        state = tr.alloc(f"{prefix}.S", act(tb * h * dh * dh))
        steps = tr.alloc(f"{prefix}.per_token_outputs", full)
        y = tr.alloc(f"{prefix}.stacked", full)
        tr.free(steps, state)
    else:
        u = tr.alloc(f"{prefix}.u=k*v", full)
        if form == "parallel":
            toeplitz = tr.alloc(f"{prefix}.toeplitz", act(h * n * n))
            g = tr.alloc(f"{prefix}.g", full)
            tr.free(toeplitz)
        else:
            state = tr.alloc(f"{prefix}.X", act(tb * h * kd * dh))
            steps = tr.alloc(f"{prefix}.per_token_g", full)
            g = tr.alloc(f"{prefix}.g", full)
            tr.free(steps, state)
        y = tr.alloc(f"{prefix}.q*g", full)
        local_vars = [u, g]
    tokens = tr.alloc(f"{prefix}.core_tokens", full)          # heads -> [T, B, N, D] (a copy)
    scaled = tr.alloc(f"{prefix}.scaled", full)
    tr.free(tokens, y)
    y = scaled
    if cfg.attention in ("lrf_ssa", "lrf_causal", "lrf_dyn"):
        acc = None                                             # sum(conv(img) for conv in convs)
        for j in range(len(cfg.lrf_dilations)):
            c = tr.alloc(f"{prefix}.lrf.conv{j}", full)
            nxt = tr.alloc(f"{prefix}.lrf.sum{j}", full)
            tr.free(c, *([acc] if acc else []))
            acc = nxt
        lt = tr.alloc(f"{prefix}.lrf.tokens", full)
        tr.free(acc)
        y2 = tr.alloc(f"{prefix}.plus_lrf", full)
        tr.free(y, lt)
        y = y2
    tr.free(*local_vars)
    return y


