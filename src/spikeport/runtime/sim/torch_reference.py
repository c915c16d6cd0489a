"""The integer contract in torch, on any device: ``spikeport run ART --backend reference --device cuda``.

``TorchIntOps`` runs the ``fixedpoint`` primitives on float64 tensors that hold exact integers (every sum stays
below 2**53, as the quantizer checks: MAX_EXACT_SUM), so a CUDA GPU computes the same integers as the numpy
reference; the tests hold the two equal in every layer at every step (tests/test_torch_reference.py; the CUDA
case runs where a GPU is present). Exactness on a GPU rests on two choices:

- float64 GEMMs (cuBLAS DGEMM, FP64 tensor cores: exact FMAs) and never TF32, which applies to float32 only;
- convolutions as unfold + GEMM, not cuDNN, whose FFT and Winograd algorithms transform the operands into
  non-integers and round.

The fake-quant executor (``convert.fakequant.TorchOps``) subclasses these ops with straight-through gradients.
Counting stays numpy's (``reference.Counter``): each observed value is copied to the host, spikes as uint8.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from spikeport import fixedpoint as fx
from spikeport.errors import ConfigError
from spikeport.ir.graph import Graph
from spikeport.ir.ops import value_kind
from spikeport.runtime.sim.executor import GraphExecutor
from spikeport.runtime.sim.reference import Counter, build_report


class TorchIntOps:
    """``fixedpoint.Ops`` on float64 tensors holding exact integers, on ``device`` (see the module docstring)."""

    def __init__(self, device: str | torch.device = "cpu") -> None:
        self.device = torch.device(device)
        # the memory an array views -> (the array, its tensor on the device)
        self._constants: dict[tuple[Any, ...], tuple[Any, torch.Tensor]] = {}

    def asint(self, x: Any) -> torch.Tensor:
        if isinstance(x, torch.Tensor):
            return x.to(self.device, torch.float64)
        if isinstance(x, np.ndarray):  # a parameter: copied to the device once
            # keyed by the memory it views, not by id: a formula's fresh view of a parameter (``w.T``) is the same
            # constant; keyed by id, each step cached another copy (770 MB a sample at ImageNet shape). The array is
            # kept, so its memory cannot be reused by another array while the entry lives.
            key = (x.__array_interface__["data"][0], x.shape, x.strides, x.dtype.str)
            held = self._constants.get(key)
            if held is None:
                held = (x, torch.as_tensor(np.asarray(x, np.float64), device=self.device))
                self._constants[key] = held
            return held[1]
        return torch.as_tensor(np.asarray(x, np.float64), device=self.device)

    def round(self, x: Any) -> torch.Tensor:
        return torch.round(self.asint(x))

    def trunc_shift(self, x: torch.Tensor, n: int) -> torch.Tensor:
        return torch.trunc(x / float(2**n))

    def floor_shift(self, x: torch.Tensor, e: int) -> torch.Tensor:
        return x * float(2**e) if e >= 0 else torch.floor(x / float(2**-e))

    def wrap_lava_u(self, x: torch.Tensor) -> torch.Tensor:
        wrapped = torch.where(x > fx.STATE_MAX, x - 2 * fx.STATE_MAX, x)
        return torch.where(wrapped <= -fx.STATE_MAX, x + 2 * fx.STATE_MAX, wrapped)

    def clip(self, x: torch.Tensor, lo: int, hi: int) -> torch.Tensor:
        return torch.clamp(x, lo, hi)

    def spike(self, v: torch.Tensor, threshold: Any) -> torch.Tensor:
        fired: torch.Tensor = v > threshold
        return fired.to(v.dtype)

    def matmul(self, a: Any, b: Any) -> torch.Tensor:
        return self.asint(a) @ self.asint(b)

    def where(self, cond: Any, a: Any, b: Any) -> torch.Tensor:
        return torch.where(cond, a, b)

    def zeros(self, shape: tuple[int, ...], like: Any = None) -> torch.Tensor:
        device = like.device if isinstance(like, torch.Tensor) else self.device
        return torch.zeros(shape, dtype=torch.float64, device=device)

    def conv2d(self, x: Any, w: Any, stride: fx.Pair, padding: fx.Pair, dilation: fx.Pair, groups: int) -> torch.Tensor:
        """Channels-last exact correlation: unfold + one GEMM per group (see the module docstring)."""
        xt = self.asint(x).permute(0, 3, 1, 2)  # [B, C, H, W]
        wt = self.asint(w).permute(0, 3, 1, 2)  # [C_out, C_in / groups, kH, kW]
        b, c, h, wd = xt.shape
        cout, cg, kh, kw = wt.shape
        ho = fx.conv_out_size(h, kh, stride[0], padding[0], dilation[0])
        wo = fx.conv_out_size(wd, kw, stride[1], padding[1], dilation[1])
        cols = F.unfold(xt, (kh, kw), dilation=tuple(dilation), padding=tuple(padding), stride=tuple(stride))
        cols = cols.view(b, groups, cg * kh * kw, ho * wo)  # [B, G, C_in/G kH kW, L]
        out = torch.einsum("bgkl,gok->bglo", cols, wt.reshape(groups, cout // groups, cg * kh * kw))
        return out.reshape(b, ho, wo, cout) if groups == 1 else out.permute(0, 2, 1, 3).reshape(b, ho, wo, cout)

    def maxpool(self, x: torch.Tensor, kernel: int, stride: int, padding: int) -> torch.Tensor:
        return F.max_pool2d(x.permute(0, 3, 1, 2), kernel, stride, padding).permute(0, 2, 3, 1)

    def concat(self, parts: Sequence[torch.Tensor], axis: int) -> torch.Tensor:
        return torch.cat(list(parts), dim=axis)


def torch_device(device: str) -> torch.device:
    """``device`` checked: a clear error where torch cannot use it."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ConfigError(f"device = {device!r}: not a torch device ({err}); expected cpu, cuda or cuda:N") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            f"device = {device!r}: torch sees no CUDA GPU (torch {torch.__version__}, "
            f"built for CUDA {torch.version.cuda or 'none'}); run on the CPU with --device cpu"
        )
    return dev


class TorchReferenceSimulator:
    """``ReferenceSimulator``'s report from the torch executor on ``device``: same integers, same counters."""

    def __init__(self, graph: Graph, device: str = "cuda") -> None:
        self.graph, self.device = graph, torch_device(device)
        self.ops = TorchIntOps(self.device)
        self.executor = GraphExecutor(graph, self.ops)
        self._spiking = {name for name in graph.order if value_kind(graph, name) == "spikes"}

    @property
    def executor_name(self) -> str:
        return f"reference-torch-{self.device.type}"

    @torch.no_grad()
    def run_batch(self, images: np.ndarray, counter: Counter | None = None) -> np.ndarray:
        """images [B, H, W, C] -> summed integer logits [B, classes] (numpy int64)."""

        def observe(t: int, name: str, out: Any, extra: dict[str, Any]) -> None:
            if counter is not None:
                counter(t, name, self._host(name, out), self._host_extra(extra))

        x = torch.as_tensor(np.asarray(images), device=self.device)  # its dtype kept: the input kernel rounds it
        logits: torch.Tensor = self.executor.run(x, observe if counter is not None else None)
        out: np.ndarray = logits.cpu().numpy().astype(np.int64)
        return out

    @staticmethod
    def _host_extra(extra: dict[str, Any]) -> dict[str, Any]:
        """What the counters read of a step's extras: a LIF's a_in only as far as |a_in| >= ACT_MAX goes (a
        float32 copy: rounding is monotonic and 2**17 exact, so the overflow count is unchanged); v stays."""
        host = {k: v for k, v in extra.items() if k != "v"}
        if isinstance(host.get("a_in"), torch.Tensor):
            host["a_in"] = host["a_in"].to(torch.float32).cpu().numpy()
        if isinstance(host.get("messages"), torch.Tensor):
            host["messages"] = host["messages"].cpu().numpy()
        return host

    def _host(self, name: str, value: Any) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        if name in self._spiking:
            value = value.to(torch.uint8)  # 8x less to copy
        return value.cpu().numpy()

    def run(
        self, images: np.ndarray, labels: np.ndarray | None = None, batch_size: int = 256, progress: bool = False
    ) -> dict[str, Any]:
        """The run report (schema spikeport.run v1), executor ``reference-torch-<device>``."""
        counter = Counter(self.graph)
        preds: list[np.ndarray] = []
        start = time.perf_counter()
        batches = range(0, len(images), batch_size)
        if progress:
            from tqdm import tqdm

            batches = tqdm(batches, desc=self.executor_name, unit="batch")
        for i in batches:
            preds.append(np.argmax(self.run_batch(images[i : i + batch_size], counter), axis=-1))
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        wall = time.perf_counter() - start
        predictions = np.concatenate(preds) if preds else np.zeros(0, np.int64)
        return build_report(self.graph, counter, predictions, labels, wall, self.executor_name)
