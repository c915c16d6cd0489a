"""A GPU's energy per sample from NVML's total-energy counter (the driver's own measurement), idle power
subtracted for the dynamic part: the measured figure `bench gpu` prefers to any estimate."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def nvml_energy(step: Callable[[], object], seconds: float, batch: int, idle_seconds: float = 2.0) -> dict[str, Any]:
    """Energy per sample from NVML's total-energy counter read before and after >= ``seconds`` of repeated
    ``step()``, minus idle power sampled for ``idle_seconds`` before (the dynamic part). Without figures, ``why``
    says what failed (no pynvml, NVML could not start, the board has no counter)."""
    import torch

    try:
        import pynvml
    except ImportError:
        why = "pynvml is not installed (pip install nvidia-ml-py)"
        return {"why": why, "notes": [f"energy not measured: {why}"]}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as err:
        why = f"NVML could not start ({err})"
        return {"why": why, "notes": [f"energy not measured: {why}"]}
    try:
        handle = _nvml_handle(pynvml, torch.cuda.current_device())
        torch.cuda.synchronize()
        samples = []
        end = time.perf_counter() + idle_seconds
        while time.perf_counter() < end:
            samples.append(pynvml.nvmlDeviceGetPowerUsage(handle) / 1e3)  # mW -> W
            time.sleep(0.05)
        idle_w = statistics.median(samples)
        e0, t0, n = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle), time.perf_counter(), 0
        with torch.no_grad():
            while time.perf_counter() - t0 < seconds:
                step()
                n += 1
                if n % 10 == 0:
                    torch.cuda.synchronize()
        torch.cuda.synchronize()
        e1, t1 = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle), time.perf_counter()
    except pynvml.NVMLError as err:
        why = f"NVML error {err}"
        return {"why": why, "notes": [f"energy not measured: {why}"]}
    finally:
        pynvml.nvmlShutdown()
    total = (e1 - e0) / 1e3  # mJ -> J
    duration = t1 - t0
    return {
        "method": "NVML total-energy counter minus idle",
        "calls": n,
        "duration_s": duration,
        "idle_W": idle_w,
        "mean_W": total / duration,
        "total_J": total,
        "per_sample_J": total / (n * batch),
        "per_sample_dynamic_J": (total - idle_w * duration) / (n * batch),
        "notes": [
            f"energy: NVML counter over {duration:.1f} s ({n} calls at batch {batch}, mean {total / duration:.0f} W), "
            f"idle {idle_w:.1f} W (median of {len(samples)} samples over {idle_seconds:g} s) subtracted "
            "for the dynamic figure; the counter updates every 20-100 ms"
        ],
    }


def _nvml_handle(pynvml: Any, index: int) -> Any:  # pynvml is untyped
    """NVML's handle of torch's device ``index``, by UUID (CUDA_VISIBLE_DEVICES renumbers torch's devices, not
    NVML's), by index where torch does not say the UUID."""
    import torch

    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    if uuid is not None:
        try:
            return pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{uuid}")
        except pynvml.NVMLError:
            pass
    return pynvml.nvmlDeviceGetHandleByIndex(index)
