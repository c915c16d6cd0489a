"""GPU baselines: the same Spikformer in float (torch, and its ONNX export under ONNX Runtime) and an ANN
ViT of similar size (same width, depth, heads and token grid).

On a CUDA machine every figure is **measured**: latency with CUDA events after warm-up (synchronised),
throughput, ``torch.cuda.max_memory_allocated`` (weights included), and energy from NVML's total-energy
counter (``nvmlDeviceGetTotalEnergyConsumption``, Volta or newer; the optional package nvidia-ml-py) read
before and after a run of several seconds of the same call, the dynamic part with the idle power sampled just
before subtracted: labelled "measured (NVML ...)". Where NVML cannot be read (no pynvml, a driver or board
without the counter) the energy is estimated from the matching GPU profile as TDP x the measured latency and
labelled "estimated (...)". Without CUDA the same figures are **estimated** from a GPU profile
(hw_profiles) and an op census of the model, and labelled so:

    time   = sum over kernels of max(FLOPs / (peak x u_compute), bytes / (bandwidth x u_memory), launch)
    busy   = sum over kernels of max(FLOPs / (peak x u_compute), bytes / (bandwidth x u_memory))
    energy = idle x time + (TDP - idle) x busy     (the utilisation power model), dynamic = (TDP - idle) x busy
    memory = weights + the peak of an eager allocation replay on the meta device

The power model follows what the call does: the board draws its idle power for the whole call, and its dynamic power
(TDP - idle) while a kernel runs at the roofline's achievable rate (its compute or memory bound); a kernel shorter
than a launch leaves the GPU waiting on the host for the rest of its launch time, at idle power. So a launch-bound
batch-1 call costs about idle x time, a saturated batch about TDP x time; ``busy / time`` is
``details["busy_share"]``. TDP x time (``details["energy_tdp_J"]``) is the upper bound and idle x time
(``energy_idle_floor_J``) the floor; both are kept.

The census replays one no_grad forward on PyTorch's meta device (shapes only, no arithmetic): the
kernels torch launches, each kernel's FLOPs (2 x the MACs of spikeport.counting's dense rules for
its matmul or convolution: what the kernel executes, so a dense k x k matmul on the tridiagonal dendritic
A costs k^2, a parallel-form core N^2 per channel), bytes read and written by every non-view op, and live
bytes with eager lifetimes. The network's FLOPs reported with the estimate (``Baseline.flops``) are 2 x
its dense MACs per inference from ``spikeport info`` (``OpCensus.macs``: the same rules and numbers as
info, the ablation's op table and the reference counter's dendritic MACs; docs/counting.md), whatever
form torch runs. A torch CPU latency is always measured as a sanity anchor.
"""

from __future__ import annotations

import statistics
import time
import weakref
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from spikeport import counting as C
from spikeport.baselines.nvml import nvml_energy
from spikeport.errors import ConfigError, unknown_choice
from spikeport.hw_profiles import HwProfile, list_profiles, load_profile
from spikeport.train.threads import torch_threads

if TYPE_CHECKING:
    import torch
    from torch import nn

    from spikeport.train.model_config import ModelConfig

SCHEMA = "spikeport.gpu_bench"
DTYPES = {"fp32": "flops_fp32", "tf32": "flops_tf32", "fp16": "flops_fp16", "bf16": "flops_bf16"}
U_COMPUTE, U_MEMORY = 0.5, 0.7  # utilisation assumptions of the estimate (stated in every label)


@dataclass
class Baseline:
    name: str  # which network: "spikformer-8-512 ssa (float SNN)", "vit counterpart (ANN)"
    executor: str  # "torch" | "onnxruntime"
    device: str
    kind: str  # "measured" | "estimated"
    label: str
    batch: int
    dtype: str
    latency_s: float | None = None  # one call at this batch
    throughput_per_s: float | None = None  # samples per second
    peak_memory_bytes: int | None = None
    energy_J: float | None = None  # per sample
    energy_dynamic_J: float | None = None  # per sample, idle subtracted
    energy_label: str | None = None  # how energy_J was obtained: "measured (NVML ...)" or "estimated (...)"
    flops: float | None = None  # per sample: 2 x the network's dense MACs (spikeport info)
    params: int | None = None
    details: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


# ---- op census on the meta device ----------------------------------------------------------------


@dataclass
class OpCensus:
    flops: list[float]  # per kernel (non-view op): what the kernel executes
    bytes: list[float]
    peak_bytes: int  # eager live-tensor peak of the forward (weights and input excluded)
    weights_bytes: int
    params: int
    macs: int = 0  # the network's dense MACs for the whole batch (spikeport info's rules)
    layer_macs: dict[str, int] = field(default_factory=dict)  # per layer, one sample and time step

    @property
    def kernels(self) -> int:
        return len(self.flops)


def _kernel_macs() -> dict[Any, Callable[[Any, Any], int]]:
    """aten op -> (args, out) -> MACs, with counting's dense rules (a matmul is a dense layer of
    ``m`` tokens, ``k`` inputs, ``n`` outputs; a convolution reads input and weight as args 0 and 1)."""
    import torch

    aten = torch.ops.aten

    def mm(a: torch.Tensor, b: torch.Tensor) -> int:
        return C.dense_macs(a.shape[-2], a.shape[-1], b.shape[-1]) * (a.shape[0] if a.dim() == 3 else 1)

    def conv(args: Any, out: torch.Tensor) -> int:
        x, w = args[0], args[1]
        groups = x.shape[1] // w.shape[1]
        return C.conv_macs(
            w.shape[1] * groups, w.shape[0], tuple(w.shape[2:]), out.numel() // w.shape[0], groups=groups
        )

    table = {
        aten.mm: lambda args, out: mm(args[0], args[1]),
        aten.bmm: lambda args, out: mm(args[0], args[1]),
        aten.addmm: lambda args, out: mm(args[1], args[2]),
        aten.baddbmm: lambda args, out: mm(args[1], args[2]),
    }
    for op in (
        aten.convolution,
        aten._convolution,
        aten.cudnn_convolution,
        aten.convolution_overrideable,
        aten._slow_conv2d_forward,
    ):
        table[op] = conv
    return table


def _dispatch_mode() -> Any:  # a TorchDispatchMode counting each aten kernel
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    from torch.utils.flop_counter import flop_registry

    kernel_macs = _kernel_macs()

    class Census(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.flops: list[float] = []
            self.bytes: list[float] = []
            self.cur = self.peak = 0

        def _free(self, n: int) -> None:
            self.cur -= n

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if func.is_view or func.overloadpacket in (torch.ops.aten.detach,):
                return out
            packet = func.overloadpacket
            if packet in kernel_macs:
                flops = 2 * kernel_macs[packet](args, out)
            elif packet in flop_registry:  # an op torch counts FLOPs for and counting has no rule for
                raise ConfigError(f"GPU op census: no counting rule for {packet} (add it to _kernel_macs)")
            else:
                flops = 0  # elementwise, reductions, copies: memory-bound, no FLOPs
            ins = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
            outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
            self.flops.append(float(flops))
            self.bytes.append(float(sum(t.nbytes for t in ins) + sum(t.nbytes for t in outs)))
            if not func._schema.is_mutable:
                for t in outs:  # eager lifetime: freed when the tensor dies
                    n = t.untyped_storage().nbytes()
                    self.cur += n
                    self.peak = max(self.peak, self.cur)
                    weakref.finalize(t, self._free, n)
            return out

    return Census()


def census(cfg: ModelConfig, batch: int = 1, dtype: str = "fp32", inference_form: str = "parallel") -> OpCensus:
    """Count one no_grad forward of ``build_model(cfg)`` on the meta device (plain-torch neurons)."""
    import torch

    from spikeport.train.models import build_model, set_inference_form

    tdtype = torch.float16 if dtype == "fp16" else torch.bfloat16 if dtype == "bf16" else torch.float32
    if cfg.arch == "spikformer":
        cfg = replace(cfg, neuron_backend="torch")
    with torch.device("meta"):
        model = build_model(cfg).eval().to(tdtype)
        images = torch.empty(batch, cfg.in_channels, cfg.img_size, cfg.img_size, dtype=tdtype)
    if cfg.arch == "spikformer":
        set_inference_form(model, inference_form)
    mode = _dispatch_mode()
    with torch.no_grad(), mode:
        model(images)
    weights = sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))
    from spikeport.train.info import model_info
    from spikeport.train.models import count_params

    info = model_info(cfg)
    return OpCensus(
        mode.flops,
        mode.bytes,
        int(mode.peak),
        int(weights),
        count_params(model),
        batch * info["macs_per_inference"],
        {r["name"]: r["macs"] for r in info["layers"] if r["macs"] and not r.get("unused")},
    )


# ---- estimate from a GPU profile -----------------------------------------------------------------


# what an estimate leaves out or assumes, said with each one
ROOFLINE_NOTES = (
    "kernels, FLOPs and bytes from a meta-device replay with the plain-torch LIF (one "
    "kernel per elementwise op; a fused CUDA LIF launches fewer)",
    "flops: the network's dense count (spikeport info, docs/counting.md); kernel_flops: "
    "what the replayed kernels execute (dense matmuls, the attention form run), which "
    "the latency uses",
    "bytes: every kernel reads its inputs and writes its outputs from DRAM (no L2 reuse)",
    "energy: the board at idle power for the whole call, plus (TDP - idle) while kernels run at the "
    "roofline rate (utilisation power model); dynamic = (TDP - idle) x that busy time; bounds: idle x time "
    "(floor) .. TDP x time (upper bound, details.energy_tdp_J)",
    "memory: weights + eager live-tensor peak (no allocator rounding, no cuDNN workspace)",
)


def estimate(
    c: OpCensus,
    profile: str | HwProfile,
    name: str,
    batch: int,
    dtype: str = "fp32",
    u_compute: float = U_COMPUTE,
    u_memory: float = U_MEMORY,
) -> Baseline:
    """Roofline latency, energy and memory of one forward on the GPU ``profile`` (a name or HwProfile)."""
    if dtype not in DTYPES:
        raise unknown_choice("dtype", dtype, DTYPES)
    p = load_profile(profile) if isinstance(profile, str) else profile
    if p.kind != "gpu":
        raise ConfigError(f"profile '{p.name}' is not a GPU profile (kind {p.kind})")
    peak, bw = p.si("compute", DTYPES[dtype]), p.si("memory", "bandwidth")
    launch = p.si("timing", "kernel_launch") if p.has("timing", "kernel_launch") else 0.0
    per_kernel = [
        max(f / (peak * u_compute), b / (bw * u_memory), launch) for f, b in zip(c.flops, c.bytes, strict=True)
    ]
    t = sum(per_kernel)
    busy = sum(max(f / (peak * u_compute), b / (bw * u_memory)) for f, b in zip(c.flops, c.bytes, strict=True))
    compute_t = sum(c.flops) / (peak * u_compute)
    memory_t = sum(c.bytes) / (bw * u_memory)
    tdp, idle = p.si("power", "tdp"), p.si("power", "idle")
    idle_quantity = p.get("power", "idle")
    assert idle_quantity is not None  # p.si refused a profile without it
    label = (
        f"estimated (roofline from hw profile {p.name}: kernel FLOPs / ({DTYPES[dtype]} x {u_compute:g}), "
        f"bytes / (bandwidth x {u_memory:g}), {launch * 1e6:g} us per kernel; energy = idle x time + (TDP - idle) x "
        "the time kernels run at that rate)"
    )
    return Baseline(
        name,
        "torch",
        f"{p.name} (profile)",
        "estimated",
        label,
        batch,
        dtype,
        latency_s=t,
        throughput_per_s=batch / t,
        peak_memory_bytes=c.weights_bytes + c.peak_bytes,
        energy_J=(idle * t + (tdp - idle) * busy) / batch,
        energy_dynamic_J=(tdp - idle) * busy / batch,
        energy_label=(
            f"estimated (utilisation power model, hw profile {p.name}: idle {idle:g} W x the roofline latency + "
            f"(TDP - idle) {tdp - idle:g} W x the time its kernels run at the roofline rate, {busy / t:.0%} of it)"
        ),
        flops=2 * c.macs / batch,
        params=c.params,
        details={
            "kernels": c.kernels,
            "kernel_flops": sum(c.flops) / batch,
            "bytes_moved": sum(c.bytes),
            "compute_bound_s": compute_t,
            "memory_bound_s": memory_t,
            "launch_bound_s": launch * c.kernels,
            "busy_s": busy,
            "busy_share": busy / t,  # the share of the call its kernels run at the roofline rate
            "u_compute": u_compute,
            "u_memory": u_memory,
            "tdp_W": tdp,
            "idle_W": idle,
            "idle_confidence": idle_quantity.confidence,
            "energy_idle_floor_J": idle * t / batch,
            "energy_tdp_J": tdp * t / batch,  # the upper bound: the board at TDP for the whole call
        },
        notes=list(ROOFLINE_NOTES),
    )


# ---- measurements --------------------------------------------------------------------------------


def _reset(model: nn.Module) -> None:
    from spikeport.train.neurons import reset_net

    reset_net(model)


def measure_cpu(
    model: nn.Module,
    images: torch.Tensor,
    name: str,
    repeats: int = 7,
    warmup: int = 2,
    budget_s: float = 20.0,
    threads: int | None = 1,
) -> Baseline:
    """Median wall time of a no_grad torch forward on the CPU (the sanity anchor): ``warmup`` calls (the
    first ones pay for lazy initialisation), then up to ``repeats`` timed calls, at least 3, stopping
    early once ``budget_s`` seconds are spent. ``threads`` intra-op threads (default 1: on a loaded
    machine torch's thread pool waits on busy cores, ~300 ms for a 1 ms model here; None = torch's
    default)."""
    model = model.to("cpu").eval()
    times: list[float] = []
    with torch_threads(threads) as in_effect:
        _time_cpu(model, images, times, repeats, warmup, budget_s)
    return _cpu_baseline(name, images, times, in_effect)


def _time_cpu(
    model: nn.Module, images: torch.Tensor, times: list[float], repeats: int, warmup: int, budget_s: float
) -> None:
    import torch

    with torch.no_grad():
        for _ in range(warmup):
            _reset(model)
            model(images)
        while len(times) < repeats and (len(times) < 3 or sum(times) < budget_s):
            _reset(model)
            start = time.perf_counter()
            model(images)
            times.append(time.perf_counter() - start)


def _cpu_baseline(name: str, images: torch.Tensor, times: list[float], threads: int) -> Baseline:
    repeats = len(times)
    median = statistics.median(times)
    return Baseline(
        name,
        "torch",
        "cpu",
        "measured",
        f"measured (CPU, torch, {threads} thread{'s' if threads != 1 else ''}, median of {repeats})",
        len(images),
        "fp32",
        latency_s=median,
        throughput_per_s=len(images) / median,
        details={"threads": threads, "repeats": repeats, "times_s": times},
        notes=["wall time with time.perf_counter; on a shared machine this is pessimistic"],
    )


def measure_cuda(
    model: nn.Module,
    images: torch.Tensor,
    name: str,
    dtype: str = "fp32",
    repeats: int = 50,
    warmup: int = 10,
    energy_seconds: float = 5.0,
    profiles: tuple[str | HwProfile, ...] = (),
) -> Baseline:
    """CUDA events latency, throughput, max_memory_allocated, NVML energy; where NVML cannot be read, energy
    estimated from the GPU profile whose name the device's name contains (``gpu_profile_for``), labelled so."""
    import torch

    dev = torch.device("cuda")
    tdtype = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = dtype == "tf32"
    try:
        return _measure_cuda(model, images, name, dtype, tdtype, dev, repeats, warmup, energy_seconds, profiles)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _measure_cuda(
    model: nn.Module,
    images: torch.Tensor,
    name: str,
    dtype: str,
    tdtype: torch.dtype,
    dev: torch.device,
    repeats: int,
    warmup: int,
    energy_seconds: float,
    profiles: tuple[str | HwProfile, ...],
) -> Baseline:
    import torch

    model = model.to(dev, tdtype).eval()
    images = images.to(dev, tdtype)

    def step() -> None:
        _reset(model)
        model(images)

    with torch.no_grad():
        times = _cuda_times(model, images, repeats, warmup)
        peak = _cuda_peak_memory(model, images)
        energy = nvml_energy(step, energy_seconds, len(images))
    median = statistics.median(times)
    gpu = torch.cuda.get_device_name(dev)
    energy, energy_label = _energy_or_estimate(energy, gpu, median, len(images), profiles)
    notes = [
        "latency: CUDA events around one forward (reset_net outside the timed region), median",
        "peak memory: torch.cuda.max_memory_allocated after reset_peak_memory_stats, weights included",
        *energy.pop("notes", []),
    ]
    return Baseline(
        name,
        "torch",
        f"cuda ({gpu})",
        "measured",
        f"measured (CUDA events; torch.cuda.max_memory_allocated); energy {energy_label or 'not available'}",
        len(images),
        dtype,
        latency_s=median,
        throughput_per_s=len(images) / median,
        peak_memory_bytes=int(peak),
        energy_J=energy.get("per_sample_J"),
        energy_dynamic_J=energy.get("per_sample_dynamic_J"),
        energy_label=energy_label,
        details={
            "repeats": repeats,
            "warmup": warmup,
            "p10_s": sorted(times)[len(times) // 10],
            "p90_s": sorted(times)[(9 * len(times)) // 10],
            "energy": energy,
        },
        notes=notes,
    )


def _cuda_times(model: nn.Module, images: torch.Tensor, repeats: int, warmup: int) -> list[float]:
    """Seconds of each of ``repeats`` forwards (CUDA events around the forward; reset_net outside), after
    ``warmup`` untimed ones."""
    import torch

    for _ in range(warmup):
        _reset(model)
        model(images)
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        _reset(model)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        model(images)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return times


def _cuda_peak_memory(model: nn.Module, images: torch.Tensor) -> int:
    """torch.cuda.max_memory_allocated over one forward, weights included."""
    import torch

    _reset(model)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    model(images)
    torch.cuda.synchronize()
    return int(torch.cuda.max_memory_allocated())


def _energy_or_estimate(
    energy: dict, gpu: str, latency_s: float, batch: int, profiles: tuple[str | HwProfile, ...]
) -> tuple[dict, str | None]:
    """(energy, its label): NVML's measurement where it was read, else the GPU profile's TDP estimate
    (``tdp_energy``) with NVML's notes kept."""
    if energy.get("per_sample_J") is not None:
        seconds = energy["duration_s"]
        return (
            energy,
            f"measured (NVML total-energy counter over {seconds:.1f} s, idle subtracted for the dynamic part)",
        )
    fallback = tdp_energy(gpu, latency_s, batch, profiles, energy.get("why", "NVML not read"))
    energy = {**fallback, "notes": energy.get("notes", []) + fallback.get("notes", [])}
    return energy, energy.get("label")


def gpu_profile_for(device_name: str, profiles: tuple[str | HwProfile, ...] = ()) -> HwProfile | None:
    """The GPU profile (``profiles`` first, names or HwProfiles, then the shipped ones) whose name the CUDA device's
    name contains ("NVIDIA H100 80GB HBM3" -> h100), or None."""
    candidates = [load_profile(p) if isinstance(p, str) else p for p in (*profiles, *list_profiles())]
    for p in candidates:
        if p.kind == "gpu" and p.name.lower() in device_name.lower():
            return p
    return None


def tdp_energy(device_name: str, latency_s: float, batch: int, profiles: tuple, why: str) -> dict:
    """The fallback where NVML cannot be read: TDP (and TDP - idle) of the matching profile x measured latency, an
    upper bound (a measured call says nothing of its kernels' utilisation here); labelled so."""
    p = gpu_profile_for(device_name, profiles)
    if p is None:
        return {"notes": [f"energy not available: {why}, and no GPU profile matches '{device_name}'"]}
    tdp, idle = p.si("power", "tdp"), p.si("power", "idle")
    idle_quantity = p.get("power", "idle")
    assert idle_quantity is not None  # p.si refused a profile without it
    return {
        "method": "TDP x measured latency",
        "label": f"estimated, upper bound (TDP of hw profile {p.name} x measured latency: {why})",
        "per_sample_J": tdp * latency_s / batch,
        "per_sample_dynamic_J": (tdp - idle) * latency_s / batch,
        "tdp_W": tdp,
        "idle_W": idle,
    }
