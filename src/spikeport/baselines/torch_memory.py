"""Measured peak inference memory of the torch float model, whole forward and per module.

Method (stated in every result):
* CUDA: ``torch.cuda.reset_peak_memory_stats()`` then ``torch.cuda.max_memory_allocated()`` around one
  ``no_grad`` forward after a warm-up forward (tensor bytes, not the caching allocator's reserved pool);
  per module the same pair around each module's forward (hooks), in a second forward.
* CPU: torch's own allocation events, recorded by ``torch.profiler`` with ``profile_memory=True``: every
  allocation and free of torch's CPU allocator, in order, summed into a running total whose maximum is the
  peak (tracemalloc does not see torch's allocator). Module boundaries come from ``record_function``
  ranges opened and closed by forward hooks. As a cross-check, the process's peak resident set (VmHWM,
  reset through /proc/self/clear_refs) is read around the same forward.
Both exclude the weights (allocated before the forward; reported separately as parameter + buffer bytes)
and the input batch. SpikingJelly's LIF keeps its membrane v after the forward: that shows in
``retained_after``; ``reset_net`` runs before every measured forward.

``memory_breakdown`` / ``analytic_memory``: metrics.memory's analytic breakdown with its activation columns
traced from the real model (activation_trace.py); ``compare``: analytic and measured, per attention variant.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spikeport.baselines.activation_trace import DTYPES, LIF_SCRATCH, CoreRanges, activation_trace, module_map
from spikeport.errors import BackendUnavailableError, ConfigError, unknown_choice
from spikeport.metrics.memory import PRECISIONS, MemoryBreakdown, breakdown
from spikeport.train.presets import preset_config

if TYPE_CHECKING:
    import torch
    from torch import nn
    from torch.autograd.profiler import record_function
    from torch.profiler import profile

    from spikeport.train.model_config import ModelConfig
    from spikeport.train.models import Spikformer


@dataclass
class MeasuredMemory:
    method: str
    device: str
    dtype: str
    batch: int
    T: int
    attention: str
    inference_form: str
    neuron_backend: str
    no_grad: bool
    weights_bytes: int  # parameters + buffers
    activation_peak: int  # max bytes allocated during the forward above the start level
    retained_after: int  # still allocated after the forward (output + LIF states)
    modules: dict[str, int] = field(default_factory=dict)  # peak above the forward's start, per module
    # bytes a module or attention core allocates above the level at its entry (its working set)
    working_sets: dict[str, int] = field(default_factory=dict)
    rss_peak_delta: int | None = None  # CPU cross-check: VmHWM after - VmRSS before
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def inference_peak(self) -> int:
        return self.weights_bytes + self.activation_peak

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(
            schema="spikeport.memory_measured",
            schema_version=1,
            inference_peak=self.inference_peak,
            label=f"measured ({self.method})",
        )
        return d


def measure(
    model: nn.Module, batch: int = 1, device: str = "cpu", dtype: str = "fp32", inference_form: str = "recurrent"
) -> MeasuredMemory:
    """Peak memory of one no_grad forward of a Spikformer at batch ``batch``, with its three q/k/v projections (the
    network the analytic model and the trace describe; the fused fast path computes the same function but hands
    the recurrent cores views of one tensor, which they copy: a few KB more at digits-tiny size)."""
    import torch

    from spikeport.train import lif_kernels
    from spikeport.train.models import Spikformer, set_fused_qkv, set_inference_form
    from spikeport.train.neurons import reset_net

    if not isinstance(model, Spikformer):
        raise ConfigError(f"memory measurement needs a spikeport Spikformer, got {type(model).__name__}")
    if dtype not in DTYPES:
        raise unknown_choice("dtype", dtype, DTYPES)
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise BackendUnavailableError("device 'cuda' requested but torch.cuda.is_available() is False")
    if device not in ("cpu",) and not device.startswith("cuda"):
        raise ConfigError(f"device {device!r}: expected 'cpu' or 'cuda[:N]'")
    cfg = model.cfg
    tdtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    model = model.to(device=device, dtype=tdtype).eval()
    set_inference_form(model, inference_form)
    set_fused_qkv(model, False)
    images = torch.rand(batch, cfg.in_channels, cfg.img_size, cfg.img_size, device=device, dtype=tdtype)
    weights = sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))
    backend = next((m.backend for m in model.modules() if hasattr(m, "backend")), cfg.neuron_backend)
    common: dict[str, Any] = dict(
        device=str(device),
        dtype=dtype,
        batch=batch,
        T=cfg.T,
        attention=cfg.attention,
        inference_form=inference_form,
        neuron_backend=str(backend),
        no_grad=True,
        weights_bytes=int(weights),
    )
    # the LIF as plain torch ops, the op sequence a GPU runs eagerly (what the analytic model and the census replay
    # describe), not the CPU's compiled loop (train/lif_kernels.py)
    with torch.no_grad(), lif_kernels.plain_loops():
        reset_net(model)
        model(images)  # warm-up: lazy inits, allocator pools
        reset_net(model)
        if str(device).startswith("cuda"):
            return _measure_cuda(model, images, common)
        return _measure_cpu(model, images, common)


def _measure_cuda(model: Spikformer, images: torch.Tensor, common: dict[str, Any]) -> MeasuredMemory:
    import torch

    from spikeport.train.neurons import reset_net

    torch.cuda.synchronize()
    start = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    model(images)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    peak = torch.cuda.max_memory_allocated() - start
    retained = torch.cuda.memory_allocated() - start
    reset_net(model)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    per_module: dict[str, int] = {}
    working: dict[str, int] = {}
    entry: dict[str, int] = {}

    def enter(name: str) -> None:
        torch.cuda.synchronize()
        entry[name] = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()

    def exit_(name: str) -> None:
        torch.cuda.synchronize()
        top = torch.cuda.max_memory_allocated()
        per_module[name] = max(per_module.get(name, 0), top - base)
        working[name] = max(working.get(name, 0), top - entry[name])

    handles = []
    for name, mod in module_map(model).items():
        handles += [
            mod.register_forward_pre_hook(lambda m, i, name=name: enter(name)),
            mod.register_forward_hook(lambda m, i, o, name=name: exit_(name)),
        ]
    try:
        model(images)
    finally:
        for h in handles:
            h.remove()
    reset_net(model)
    with CoreRanges(model, enter, exit_):  # a separate pass: resetting the peak inside attn would
        model(images)  # hide the attention module's own peak
    per_module = {k: v for k, v in per_module.items() if not k.endswith(".core")}
    return MeasuredMemory(
        method="torch.cuda.max_memory_allocated",
        activation_peak=int(peak),
        retained_after=int(retained),
        modules=per_module,
        working_sets=working,
        wall_s=wall,
        notes=["tensor bytes from the CUDA caching allocator (max_memory_reserved is larger)"],
        **common,
    )


def _rss() -> tuple[int, int]:
    """(VmRSS, VmHWM) in bytes from /proc/self/status."""
    vals: dict[str, int] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            key, value = line.split(":")
            vals[key] = int(value.split()[0]) * 1024
    return vals.get("VmRSS", 0), vals.get("VmHWM", 0)


def _reset_hwm() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # Linux >= 4.0: resets VmHWM to VmRSS
        return True
    except OSError:
        return False


@contextlib.contextmanager
def _cpp_stderr_silenced() -> Iterator[None]:
    """File descriptor 2 pointed at /dev/null (what C++ code writes there bypasses sys.stderr)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _measure_cpu(model: Spikformer, images: torch.Tensor, common: dict[str, Any]) -> MeasuredMemory:
    from torch.profiler import ProfilerActivity, profile, record_function

    notes = ["CPU: running sum of torch allocator events (torch.profiler, profile_memory=True)"]
    open_ranges: dict[str, record_function] = {}
    handles = []
    for name, mod in module_map(model).items():

        def pre(m: nn.Module | None, inp: object, name: str = name) -> None:
            rf = record_function(f"spikeport::{name}")
            rf.__enter__()
            open_ranges[name] = rf

        def post(m: nn.Module | None, inp: object, out: object, name: str = name) -> None:
            open_ranges.pop(name).__exit__(None, None, None)

        handles += [mod.register_forward_pre_hook(pre), mod.register_forward_hook(post)]
    cores = CoreRanges(model, lambda name: pre(None, None, name), lambda name: post(None, None, None, name))
    prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    try:
        with cores:
            with _cpp_stderr_silenced():  # kineto writes "profiler_start" / "profiler_stop" lines to fd 2
                prof.__enter__()
            try:
                t0 = time.perf_counter()
                model(images)
                wall = time.perf_counter() - t0
            finally:
                with _cpp_stderr_silenced():
                    prof.__exit__(None, None, None)
    finally:
        for h in handles:
            h.remove()
    peak, retained, per_module, working = _replay(prof)
    per_module = {k: v for k, v in per_module.items() if not k.endswith(".core")}

    # cross-check: peak RSS of the same forward
    from spikeport.train.neurons import reset_net

    reset_net(model)
    rss_delta = None
    rss_before, _ = _rss()
    if _reset_hwm():
        model(images)
        rss_delta = _rss()[1] - rss_before
        notes.append(
            "rss_peak_delta: VmHWM after the forward - VmRSS before (includes allocator slack "
            "and memory glibc keeps after free)"
        )
    else:
        notes.append("rss cross-check unavailable (/proc/self/clear_refs not writable)")
    return MeasuredMemory(
        method="torch.profiler CPU allocation events",
        activation_peak=int(peak),
        retained_after=int(retained),
        modules=per_module,
        working_sets=working,
        rss_peak_delta=rss_delta,
        wall_s=wall,
        notes=notes,
        **common,
    )


def _replay(prof: profile) -> tuple[int, int, dict[str, int], dict[str, int]]:
    """(peak, final, per-range peak, per-range peak above entry) of the allocation running sum."""
    try:
        results = None if prof.profiler is None else prof.profiler.kineto_results
        events = None if results is None else list(results.events())
    except AttributeError as err:  # a torch without the kineto result API
        raise BackendUnavailableError(f"torch.profiler memory events unavailable in this torch: {err}") from None
    if events is None:
        raise BackendUnavailableError("torch.profiler memory events unavailable: the profile holds no kineto results")
    allocs = sorted(
        # torch's _C/_autograd.pyi omits _KinetoEvent.nbytes(), which the binding has (torch 2.x)
        (e.start_ns(), e.nbytes())  # type: ignore[attr-defined]
        for e in events
        if e.name() == "[memory]" and e.device_type().name == "CPU"
    )
    times, levels, running = [], [], 0
    for t, nbytes in allocs:
        running += nbytes
        times.append(t)
        levels.append(running)
    peak = max(levels, default=0)
    per_range: dict[str, int] = {}
    working: dict[str, int] = {}
    for e in events:
        if not e.name().startswith("spikeport::"):
            continue
        name, lo, hi = e.name().split("::", 1)[1], e.start_ns(), e.start_ns() + e.duration_ns()
        i, j = bisect.bisect_left(times, lo), bisect.bisect_right(times, hi)
        entry = levels[i - 1] if i > 0 else 0
        top = max(levels[i:j], default=entry)
        per_range[name] = max(per_range.get(name, 0), top)
        working[name] = max(working.get(name, 0), top - entry)
    return peak, running, per_range, working


def memory_breakdown(
    cfg: ModelConfig,
    precision: str = "fp32",
    batch: int = 1,
    inference_form: str = "recurrent",
    lif_impl: str = "ideal",
    name: str = "custom",
) -> MemoryBreakdown:
    """metrics.memory's analytic breakdown of ``cfg``, with the activation columns traced from the real
    model's forward (activation_trace.py) at the torch precisions; ``loihi`` has none."""
    if precision not in PRECISIONS:
        raise unknown_choice("precision", precision, PRECISIONS)
    if lif_impl not in LIF_SCRATCH:
        raise unknown_choice("LIF implementation", lif_impl, LIF_SCRATCH)
    activations = activation_trace(cfg, precision, batch, inference_form, lif_impl) if precision in DTYPES else None
    return breakdown(cfg, precision, batch, name=name, activations=activations)


def analytic_memory(
    preset: str,
    attention: str | None = None,
    precision: str = "fp32",
    batch: int = 1,
    T: int | None = None,
    inference_form: str = "recurrent",
    lif_impl: str = "ideal",
    **overrides: Any,
) -> MemoryBreakdown:
    """Per-module bytes of a preset (or of ``preset_config(preset, **overrides)``) at a precision."""
    if precision not in PRECISIONS:
        raise unknown_choice("precision", precision, PRECISIONS)
    if batch < 1:
        raise ConfigError(f"batch must be >= 1, got {batch}")
    cfg = preset_config(preset, attention=attention, T=T, **overrides)
    if cfg.arch != "spikformer":
        raise ConfigError(f"preset '{preset}' is a {cfg.arch}: the memory breakdown is for Spikformer models")
    return memory_breakdown(cfg, precision, batch, inference_form, lif_impl, name=preset)


def compare(
    preset: str,
    attentions: list[str],
    batch: int = 1,
    T: int | None = None,
    dtype: str = "fp32",
    measure_torch: bool = True,
    device: str = "cpu",
    inference_form: str = "recurrent",
    progress: Callable[[str], object] | None = None,
) -> dict:
    """Analytic (torch precision and Loihi precision) and measured memory of one preset per attention
    variant, with ratios against the first variant. JSON-ready (schema spikeport.memory_compare v1)."""
    from spikeport.train.models import build_model

    if not attentions:
        raise ConfigError("give at least one attention variant to compare")
    results = []
    for att in attentions:
        cfg = preset_config(preset, attention=att, T=T)
        # SpikingJelly's CPU LIF keeps per-step lists (LIF_SCRATCH); on CUDA its fused kernels do not
        impl = "spikingjelly-cpu" if device == "cpu" and cfg.neuron_backend == "spikingjelly" else "ideal"
        entry = {
            "attention": att,
            "analytic": memory_breakdown(cfg, dtype, batch, inference_form, "ideal", preset).to_dict(),
            "analytic_impl": memory_breakdown(cfg, dtype, batch, inference_form, impl, preset).to_dict(),
            "analytic_loihi": memory_breakdown(cfg, "loihi", batch, inference_form, "ideal", preset).to_dict(),
            "lif_impl": impl,
            "measured": None,
        }
        if measure_torch:
            if progress:
                progress(
                    f"measuring {preset} {att}: torch float forward ({device}, batch {batch}, T {cfg.T}, "
                    f"{dtype}, no_grad, {inference_form} form)"
                )
            entry["measured"] = measure(build_model(cfg), batch, device, dtype, inference_form).to_dict()
        results.append(entry)
    return {
        "schema": "spikeport.memory_compare",
        "schema_version": 1,
        "preset": preset,
        "batch": batch,
        "dtype": dtype,
        "device": device,
        "inference_form": inference_form,
        "results": results,
        "summary": summarize(results),
    }


SUMMARY_ROWS = (  # (short label, where in a result, what it is)
    (
        "attn core state",
        ("analytic", "totals", "attention_core"),
        "K^T V / running sum S / dendritic X, all blocks, torch precision",
    ),
    (
        "attn state",
        ("analytic", "attention_state_total"),
        "core + Q,K,V of all tokens (ssa) or the LRF window of V (recurrent forms)",
    ),
    ("attn state @Loihi", ("analytic_loihi", "attention_state_total"), "16-bit K^T V / S, 24-bit X, 1-bit spikes"),
    ("weights", ("analytic", "totals", "weights"), "parameters + BN buffers"),
    ("LIF state", ("analytic", "totals", "neuron_state"), "membrane potentials, per inference"),
    ("held total", ("held",), "weights + LIF state + attn state (token-streaming deployment)"),
    ("held total @Loihi", ("held_loihi",), "8-bit weights, 24-bit u and v, folded BN"),
    ("act peak analytic", ("analytic", "activation_peak"), "layer-by-layer torch run, ideal LIF"),
    ("act peak analytic impl", ("analytic_impl", "activation_peak"), "the same with the LIF implementation's scratch"),
    ("act peak measured", ("measured", "activation_peak"), "measured peak of one forward above the weights"),
    ("inference peak measured", ("measured", "inference_peak"), "weights + measured activation peak"),
    ("core working set measured", ("core_ws_measured",), "bytes SSA.mix allocates, largest block"),
    ("core working set analytic", ("core_ws_analytic",), "the same, analytic"),
)


def _held(bd: dict) -> int:
    return sum(bd["totals"][k] for k in ("weights", "neuron_state", "attention_core", "attention_buffers"))


def summarize(results: list[dict]) -> list[dict]:
    """One row per figure: value per attention and the ratio to the first attention."""

    def value(res: dict, path: tuple) -> float | None:
        if path == ("held",):
            return _held(res["analytic"])
        if path == ("held_loihi",):
            return _held(res["analytic_loihi"])
        if path == ("core_ws_measured",):
            m = res["measured"]
            return (
                None
                if m is None
                else max((v for k, v in m["working_sets"].items() if k.endswith(".core")), default=None)
            )
        if path == ("core_ws_analytic",):
            return max((m["core_working_set"] or 0 for m in res["analytic"]["modules"]), default=None)
        node: Any = res
        for key in path:
            if node is None:
                return None
            node = node.get(key)
        return node

    rows = []
    for label, path, note in SUMMARY_ROWS:
        values = {r["attention"]: value(r, path) for r in results}
        base = values[results[0]["attention"]]
        ratios = {a: (v / base if v is not None and base else None) for a, v in values.items()}
        rows.append({"figure": label, "note": note, "bytes": values, "ratio_to_" + results[0]["attention"]: ratios})
    return rows
