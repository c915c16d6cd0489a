"""Activation memory of a layer-by-layer torch forward, traced from the real model (not replayed by hand).

``activation_trace(cfg, ...)`` builds models.py's Spikformer on PyTorch's meta device (shapes, no
arithmetic) and runs one no_grad forward under a dispatch mode that sees every aten op the forward runs:

* the output storage of every op that is neither a view nor in-place is one allocation; a finalizer on
  the storage frees it when torch does, so lifetimes are eager torch's own (a tensor dies after its last
  use, Python keeps a function's locals and a call's arguments until it returns, a view keeps its base);
* forward hooks attribute each moment to a scope of the memory breakdown (stem, block.i.attn,
  block.i.mlp, head) and to the attention core (``SSA.mix``), and name each tensor after its module;
* LIF groups are opaque: each holds its membrane v (kept until ``reset_net``) and its output spikes, plus
  ``LIF_SCRATCH[lif_impl]`` output-sized buffers while it runs. What a LIF implementation allocates inside
  depends on its device path (SpikingJelly: a Python reference loop on the CPU, fused kernels on CUDA, a
  shape-only kernel on meta), so that part is modelled, not traced.

The forward is recorded once as a list of ledger calls (allocations, frees, scope changes) and replayed
for each LIF implementation. Not counted: the weights (allocated before the forward), the input batch,
kernel-internal scratch of conv and matmul. The meta kernel of batch norm returns its two per-channel
statistics where the CPU kernel returns empty ones (2 x C values, freed at once). The result is what
``metrics.memory.breakdown`` reads as its activation view; tests/test_report_memory.py compares it with
the allocator events of a real CPU forward (``torch_memory.measure``).
"""

from __future__ import annotations

import functools
import json
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spikeport.errors import ConfigError, unknown_choice
from spikeport.train.model_config import ModelConfig

if TYPE_CHECKING:
    import torch
    from torch import nn

    from spikeport.train.models import Block, Spikformer

# Extra output-sized buffers a multi-step LIF implementation holds while it runs: none for an ideal
# in-place neuron; 3 for SpikingJelly 2.0's CPU path (per-step spikes and states kept in two lists, then
# both stacked), calibrated against the allocator events of a CPU forward.
LIF_SCRATCH = {"ideal": 0, "spikingjelly-cpu": 3}
DTYPES = ("fp32", "fp16", "bf16")

Event = tuple  # (ledger method name, *arguments)


@dataclass
class ActivationTrace:
    """Live bytes of one forward, per scope of the breakdown (the modules, and ``block.i.attn.core``)."""

    peak: int = 0
    peak_module: str = ""
    module_peak: dict[str, int] = field(default_factory=dict)  # live bytes at the scope's peak
    working: dict[str, int] = field(default_factory=dict)  # peak above the level at the scope's entry
    at_peak: list[tuple[str, int]] = field(default_factory=list)  # (tensor, bytes) live at the global peak
    description: str = ""


class _Ledger:
    """Live bytes over time, fed the recorded events: per scope the peak and the working set."""

    def __init__(self, scratch: int) -> None:
        self.trace = ActivationTrace()
        self.scratch = scratch
        self.live: dict[object, tuple[str, int]] = {}
        self.cur = 0
        self.scopes: list[str] = []
        self._entry: dict[str, int] = {}
        self.pending: str | None = None  # a scope to enter at the next allocation

    def replay(self, events: tuple[Event, ...]) -> ActivationTrace:
        for method, *args in events:
            getattr(self, method)(*args)
        return self.trace

    def enter(self, module: str) -> None:
        """Start a top-level scope (ends the previous one); entering the current one again is a no-op."""
        self.pending = None
        if self.scopes[:1] != [module]:
            self.scopes = []
            self.push(module)

    def enter_at_next_alloc(self, module: str) -> None:
        """Start ``module`` at the next allocation: the frees before it (a caller rebinding its variable
        after a module returned) still belong to the scope that ends."""
        self.pending = module

    def push(self, scope: str) -> None:
        self.scopes.append(scope)
        self._entry[scope] = self.cur
        self._touch()

    def pop(self) -> None:
        self.scopes.pop()

    def _touch(self) -> None:
        t = self.trace
        for sc in self.scopes:
            t.module_peak[sc] = max(t.module_peak.get(sc, 0), self.cur)
            t.working[sc] = max(t.working.get(sc, 0), self.cur - self._entry[sc])

    def alloc(self, key: object, name: str, nbytes: int) -> None:
        if self.pending is not None:
            self.enter(self.pending)
        self.live[key] = (name, nbytes)
        self.cur += nbytes
        self._touch()
        if self.cur > self.trace.peak:
            self.trace.peak, self.trace.peak_module = self.cur, self.scopes[0] if self.scopes else ""
            self.trace.at_peak = sorted(self.live.values(), key=lambda kv: -kv[1])

    def free(self, key: object) -> None:
        self.cur -= self.live.pop(key)[1]

    def lif_scratch(self, name: str, output_bytes: int) -> None:
        if self.scratch:
            self.alloc((name, "scratch"), f"{name}.scratch", self.scratch * output_bytes)

    def lif_scratch_end(self, name: str) -> None:
        if self.scratch:
            self.free((name, "scratch"))


class _Recorder:
    """Turns the forward's storages into alloc / free events, in the order torch makes and frees them."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.live: set[int] = set()
        self.outside: set[int] = set()  # storages made before the forward: weights, buffers, input
        self.paused = 0  # > 0 while an opaque LIF runs
        self._finalizers: list[weakref.finalize] = []

    def track(self, name: str, tensor: torch.Tensor) -> None:
        """Count ``tensor``'s storage from now until torch frees it (once, however many tensors share it)."""
        storage = tensor.untyped_storage()
        key = id(storage)  # torch keeps one Python object per live storage
        if key in self.live or key in self.outside or not storage.nbytes():
            return
        self.live.add(key)
        self.events.append(("alloc", key, name, storage.nbytes()))
        self._finalizers.append(weakref.finalize(storage, self._free, key))

    def _free(self, key: int) -> None:
        self.live.discard(key)
        self.events.append(("free", key))

    def lif(self, name: str, spikes: torch.Tensor, v: torch.Tensor) -> None:
        """An opaque LIF group has run: its v stays, its spikes are out, its scratch came and went."""
        self.track(f"{name}.v", v)
        nbytes = spikes.numel() * spikes.element_size()
        self.events.append(("lif_scratch", name, nbytes))
        self.track(f"{name}.spikes", spikes)
        self.events.append(("lif_scratch_end", name))

    def close(self) -> tuple[Event, ...]:
        for f in self._finalizers:  # storages that outlive the forward (LIF v, logits) stay live
            f.detach()
        return tuple(self.events)


def _blocks(model: Spikformer) -> list[Block]:
    """The encoder blocks of ``model``, typed (an nn.ModuleList yields plain Modules)."""
    from spikeport.train.models import Block

    blocks = []
    for blk in model.block:
        assert isinstance(blk, Block)  # Spikformer builds its ModuleList from Blocks
        blocks.append(blk)
    return blocks


def module_map(model: Spikformer) -> dict[str, nn.Module]:
    """The modules the breakdown names: stem, block.i.attn, block.i.mlp, head."""
    mods: dict[str, nn.Module] = {"stem": model.patch_embed}
    for i, blk in enumerate(_blocks(model)):
        mods[f"block.{i}.attn"] = blk.attn
        if blk.mlp is not None:
            mods[f"block.{i}.mlp"] = blk.mlp
    mods["head"] = model.head
    return mods


class CoreRanges:
    """Wraps each block's ``attn.mix`` (the token-mixing core) on the instance, calling ``enter(name)``
    and ``exit(name)`` around it; removed on exit. models.py stays untouched."""

    def __init__(self, model: Spikformer, enter: Callable[[str], None], exit_: Callable[[str], None]) -> None:
        self.blocks, self.enter, self.exit = _blocks(model), enter, exit_

    def __enter__(self) -> CoreRanges:
        for i, blk in enumerate(self.blocks):
            orig, name = blk.attn.mix, f"block.{i}.attn.core"

            def wrapped(
                q: torch.Tensor,
                k: torch.Tensor,
                v: torch.Tensor,
                orig: Callable[..., torch.Tensor] = orig,
                name: str = name,
            ) -> torch.Tensor:
                self.enter(name)
                try:
                    return orig(q, k, v)
                finally:
                    self.exit(name)

            # an instance attribute shadows SSA.mix until __exit__ deletes it: models.py stays untouched
            blk.attn.mix = wrapped  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        for blk in self.blocks:
            del blk.attn.mix


def activation_trace(
    cfg: ModelConfig, dtype: str = "fp32", batch: int = 1, inference_form: str = "recurrent", lif_impl: str = "ideal"
) -> ActivationTrace:
    """Trace one no_grad forward of ``build_model(cfg)`` (a Spikformer) at ``batch`` in torch ``dtype``."""
    if dtype not in DTYPES:
        raise unknown_choice("dtype", dtype, DTYPES)
    if lif_impl not in LIF_SCRATCH:
        raise unknown_choice("LIF implementation", lif_impl, LIF_SCRATCH)
    if batch < 1:
        raise ConfigError(f"batch must be >= 1, got {batch}")
    if cfg.arch != "spikformer":
        raise ConfigError(f"the activation trace is for Spikformer models, not {cfg.arch}")
    events = _record(json.dumps(cfg.to_dict(), sort_keys=True), dtype, batch, inference_form)
    trace = _Ledger(LIF_SCRATCH[lif_impl]).replay(events)
    trace.description = (
        f"activations: the real model's layer-by-layer torch forward ({inference_form} attention form, all T "
        f"steps per module) traced on the meta device, each op's output held until torch frees it; LIF v "
        f"kept until reset_net; LIF scratch '{lif_impl}' (modelled); the input batch and conv/matmul scratch "
        f"are not counted"
    )
    return trace


@functools.lru_cache(maxsize=8)  # the LIF implementations of one config replay one recorded forward
def _record(cfg_json: str, dtype: str, batch: int, inference_form: str) -> tuple[Event, ...]:
    import torch

    model, images = _meta_model(cfg_json, dtype, batch, inference_form)
    rec = _Recorder()
    rec.outside = {id(t.untyped_storage()) for t in (*model.parameters(), *model.buffers(), images)}
    hooks = _Hooks(model, rec)
    handles = hooks.attach(model)
    try:
        with torch.no_grad(), CoreRanges(model, hooks.core_enter, hooks.core_exit), _allocations(rec, hooks.running):
            model(images)
    finally:
        for h in handles:
            h.remove()
    return rec.close()


def _meta_model(cfg_json: str, dtype: str, batch: int, inference_form: str) -> tuple[Spikformer, torch.Tensor]:
    """The configured Spikformer and an input batch on the meta device, its attention in ``inference_form``."""
    import torch

    from spikeport.train.models import Spikformer, build_model, set_inference_form
    from spikeport.train.neurons import reset_net

    # The LIF is opaque here, and the plain-torch one has the state and output of every implementation.
    cfg = ModelConfig.from_dict({**json.loads(cfg_json), "neuron_backend": "torch"})
    tdtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    with torch.device("meta"):
        model = build_model(cfg).eval().to(tdtype)
        images = torch.empty(batch, cfg.in_channels, cfg.img_size, cfg.img_size, dtype=tdtype)
    assert isinstance(model, Spikformer)  # activation_trace admits spikformer configs only
    set_inference_form(model, inference_form)
    reset_net(model)
    return model, images


def _allocations(rec: _Recorder, running: list[str]) -> Any:
    """A dispatch mode that tracks the output storage of every op that is neither a view nor in-place, named after
    the innermost running module (``running[-1]``) and the op."""
    import torch
    from torch._ops import OpOverload
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Allocations(TorchDispatchMode):
        def __torch_dispatch__(
            self,
            func: OpOverload,
            types: Sequence[type],
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:
            out = func(*args, **(kwargs or {}))
            if not rec.paused and not func.is_view and not func._schema.is_mutable:
                for t in tree_flatten(out)[0]:
                    if isinstance(t, torch.Tensor):
                        rec.track(f"{running[-1]}:{func.overloadpacket.__name__}", t)
            return out

    return Allocations()


class _Hooks:
    """The forward's hooks: which module is running (innermost last, for the allocations' names), each LIF group
    opaque while it runs, and the scopes of the breakdown entered as the forward reaches them."""

    def __init__(self, model: Spikformer, rec: _Recorder) -> None:
        self.rec = rec
        self.names = {m: name or "model" for name, m in model.named_modules()}
        self.running: list[str] = []  # the modules whose forward is running, innermost last

    def attach(self, model: Spikformer) -> list[Any]:
        """Every hook on ``model``; the handles that remove them."""
        from spikeport.train.neurons import is_lif

        handles = []
        for m in model.modules():
            handles += [m.register_forward_pre_hook(self.module_pre), m.register_forward_hook(self.module_post)]
            if is_lif(m):
                handles += [m.register_forward_pre_hook(self.lif_pre), m.register_forward_hook(self.lif_post)]
        # The scopes: the stem from the start (the input repeated T times is its), each module from its
        # start, the head from the first allocation after the last block (the token and time means).
        for name, m in [("stem", model), *module_map(model).items()]:
            handles.append(m.register_forward_pre_hook(self.scope(name)))
        blocks = _blocks(model)
        last: nn.Module = blocks[-1] if blocks else model.patch_embed
        handles.append(last.register_forward_hook(self.head_scope))
        return handles

    def module_pre(self, m: nn.Module, args: tuple[Any, ...]) -> None:
        self.running.append(self.names[m])

    def module_post(self, m: nn.Module, args: tuple[Any, ...], out: Any) -> None:
        # (a forward hook's return value would replace the output)
        self.running.pop()

    def lif_pre(self, m: nn.Module, args: tuple[Any, ...]) -> None:
        self.rec.paused += 1

    def lif_post(self, m: nn.Module, args: tuple[Any, ...], out: torch.Tensor) -> None:
        import torch

        self.rec.paused -= 1
        v = m.v
        assert isinstance(v, torch.Tensor)  # the LIF has run: v holds its membranes
        self.rec.lif(self.names[m], out, v)

    def scope(self, name: str) -> Callable[[nn.Module, tuple[Any, ...]], None]:
        return lambda m, args: self.rec.events.append(("enter", name))

    def head_scope(self, m: nn.Module, args: tuple[Any, ...], out: Any) -> None:
        self.rec.events.append(("enter_at_next_alloc", "head"))

    def core_enter(self, name: str) -> None:
        self.running.append(name)
        self.rec.events.append(("push", name))

    def core_exit(self, name: str) -> None:
        self.running.pop()
        self.rec.events.append(("pop",))
