"""The kernel record: everything spikeport knows about one IR op, in one place.

A record holds the op's spec (attributes, parameters, input kinds, shape rule: what the artifact reader and
the converter validate), its part of the quantization plan, its integer step (written once against an
``ops`` backend, so the numpy reference and the torch fake-quant executor run the same code) and its
count (written once against a ``counting.CountOps`` backend, so the numpy counter and the torch executor's
device counter count with the same code; the formulas live in ``spikeport.counting``, the counters are the
records of ``spikeport.counters``). Backends and exporters keep their
own per-op tables (``spikeport.ir.registry.Registry``) in their own packages.

Hooks a record may leave out (``None``) mean "nothing to do for this op": no parameters to quantize, no
events to count, no state held.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

import numpy as np

from spikeport.counting import CountOps
from spikeport.errors import ConversionError
from spikeport.fixedpoint import Ops
from spikeport.ir.graph import Graph, Node
from spikeport.value_kinds import VALUE_KINDS, ValueKind

Shape = tuple[int, ...]
# counter name (spikeport.counters) -> what one step adds: a Python int, or a scalar of the CountOps backend
Counts = Mapping[str, Any]


class KernelRole(Enum):
    """What an op is to the reports: its state and its output are counted in the rows its role says (never by op
    name, so that a new neuron op lands in the neuron rows by declaring it)."""

    NEURON = "neuron"  # integrates and fires (or sends): its state is neuron state, its output a layer's activity
    ATTENTION = "attention"  # the token mixing: its state (where it keeps one) is attention state
    OTHER = "other"  # synapses, sums, pooling, I/O: weights or nothing between steps


@dataclass(frozen=True)
class Attr:
    name: str
    kind: type | tuple[type, ...]  # int, float, str, tuple (of ints)
    quantized_only: bool = False  # present only after the quantize pass
    check: Callable[[Any], str | None] | None = None  # value -> error text or None
    optional: bool = False  # a record of how the integers were derived that some producers leave out


@dataclass(frozen=True)
class Param:
    name: str  # float name before quantization
    qname: str | None  # integer name after quantization; None: a float-only parameter (folded into others)
    qrange: tuple[int, int] | None = None  # allowed integer range after quantization
    float_optional: bool = False  # may be absent before quantization (added by a pass)
    optional: bool = False  # may be absent in both forms (a feature some nodes of the op have)


@dataclass(frozen=True)
class OpSpec:
    op: str
    input_kinds: tuple[ValueKind, ...]  # accepted value kinds of every input
    n_inputs: tuple[int, int]  # min, max
    out_kind: ValueKind
    attrs: tuple[Attr, ...] = ()
    params: tuple[Param, ...] = ()
    infer_shape: Callable[[Node, list[Shape]], Shape] | None = None
    param_shapes: Callable[[Node, str], dict[str, Shape]] | None = None  # (node, layout) -> {float name: shape}
    # rules between attributes, parameters and input shapes: (node, input shapes) -> error text or None
    check: Callable[[Node, list[Shape]], str | None] | None = None
    doc: str = ""  # the op's equation, as in docs/ops.md

    def __post_init__(self) -> None:
        # the registered records, also where a name was given: an unknown kind fails when the op registers
        where = f"op '{self.op}'"
        object.__setattr__(self, "input_kinds", tuple(VALUE_KINDS.get(k, where) for k in self.input_kinds))
        object.__setattr__(self, "out_kind", VALUE_KINDS.get(self.out_kind, where))


@dataclass(frozen=True)
class PlanOptions:
    """What the quantization plan of a whole graph was asked for."""

    stats: Mapping[str, float]  # lif node -> calibrated max |input| (pre-neuron, before 1/tau)
    input_range: float  # |pixel| after normalization
    input_bits: int  # graded-spike payload of the input


@dataclass(frozen=True)
class SynapseRole:
    """How an op that feeds a LIF group's ``a_in`` takes part in that group's scale (sigma) choice.

    ``magnitude``: the largest |weight| of the path in LIF input units (None: the path has no weights);
    ``shortfall``: how many steps finer sigma must be for this path to keep an exact (non-flooring) sum;
    ``plan``: set the path's exponents for the chosen ``sigma_exp``; ``fold_tau``: divide the path by tau
    (SpikingJelly's H = V + (X - V) / tau becomes a_in = X / tau on Loihi)."""

    plan: Callable[[Graph, Node, int], None]
    fold_tau: Callable[[Node, float], None]
    magnitude: Callable[[Graph, Node], float | None] = lambda graph, node: None
    shortfall: Callable[[Graph, Node, int], int] = lambda graph, node, sigma_exp: 0


@dataclass(frozen=True)
class QuantError:
    """Which parameter the conversion report's per-node quantization error is measured on."""

    param: str  # float name
    qname: str  # integer name
    scale: Callable[[Node], Any]  # integer -> float units (a scalar, or an array that broadcasts)
    limits: tuple[int, int]
    reference: Callable[[Node], np.ndarray] | None = None  # the float values; default: node.params[param]


class Step(Protocol):
    """What a kernel's step sees besides its inputs (the executor): the ops backend, the time step, the
    images, every node's integer parameters and what each record's ``prepare`` built from them (read-only
    properties, so an executor may hold any subtype: a dict for a Mapping, IntOps for Ops)."""

    @property
    def ops(self) -> Ops: ...
    @property
    def t(self) -> int: ...
    @property
    def images(self) -> Any: ...
    @property
    def qparams(self) -> Mapping[str, Mapping[str, Any]]: ...
    @property
    def prepared(self) -> Mapping[str, Any]: ...


# (ctx, node, inputs, node state, extra) -> output
StepFn = Callable[[Step, Node, list[Any], dict[str, Any], dict[str, Any]], Any]
# (count ops, node, input values, output, extra: what the step left, and the node's "input_kind") -> increments
CountFn = Callable[[CountOps, Node, list[Any], Any, dict[str, Any]], Counts]


@dataclass(frozen=True)
class Kernel:
    spec: OpSpec
    step: StepFn
    prepare: Callable[[Node, Mapping[str, np.ndarray]], Any] | None = None  # per-node constants for step
    plan: Callable[[Graph, Node, PlanOptions], None] | None = None  # node-local quantization choices
    synapse: SynapseRole | None = None  # feeds a LIF's a_in
    quantize: Callable[[Node, Mapping[str, Any], Any], dict[str, Any]] | None = None  # float -> integer params
    quant_error: QuantError | None = None
    count: CountFn | None = None  # per time step; keys: counters of spikeport.counters (Scope.LAYER)
    # the counters ``count`` may return: what a run report's row of this op can hold (``gather.models`` refuses
    # a row counting another; ``runtime.counter.RunCounter`` refuses a kernel counting one it does not declare)
    counters: tuple[str, ...] = ()
    neurons: Callable[[Node], int] = lambda node: 0  # neuron updates per time step and sample
    state_bytes: Callable[[Node], int] = lambda node: 0  # state held between inputs and outputs
    fan_in: Callable[[Node], int] = lambda node: 0  # synapses per output neuron
    synapses_per_input: Callable[[Node], float] = lambda node: 0.0  # synapses one input event drives
    # steps a process without a reset runs before a stream's first step reaches it (its pipeline depth);
    # the executors replay them at t = -warmup .. -1 on zero input (see sigma_delta)
    warmup: Callable[[Node], int] = lambda node: 0
    role: KernelRole = KernelRole.OTHER  # the report rows it counts in

    @property
    def op(self) -> str:
        return self.spec.op


# ------------------------------------------------------------------------------ attribute checks
def between(lo: int, hi: int) -> Callable[[Any], str | None]:
    return lambda v: None if lo <= v <= hi else f"must be in [{lo}, {hi}]"


def positive(v: Any) -> str | None:
    return None if (all(x > 0 for x in v) if isinstance(v, tuple) else v > 0) else "must be > 0"


def pair(v: Any) -> str | None:
    return None if len(v) == 2 and all(x >= 0 for x in v) else "must be two non-negative ints"


def ints(n: int | None = None, lo: int | None = None, hi: int | None = None) -> Callable[[Any], str | None]:
    """A tuple of ``n`` integers (any number when None), each in [lo, hi] where given."""

    def check(v: Any) -> str | None:
        if n is not None and len(v) != n:
            return f"must have {n} elements, has {len(v)}"
        if (lo is not None and any(x < lo for x in v)) or (hi is not None and any(x > hi for x in v)):
            return f"must hold values in [{lo if lo is not None else '-inf'}, {hi if hi is not None else 'inf'}]"
        return None

    return check


def per_head(*names: str) -> Callable[[Node, list[Shape]], str | None]:
    """A node check: the tuple attributes ``names`` hold one value per head."""

    def check(node: Node, shapes: list[Shape]) -> str | None:
        for name in names:
            if name in node.attrs and len(node.attrs[name]) != node.attrs["heads"]:
                heads = node.attrs["heads"]
                return f"attribute '{name}' has {len(node.attrs[name])} values, expected one per head ({heads})"
        return None

    return check


def same_shape(node: Node, shapes: list[Shape]) -> Shape:
    if any(s != shapes[0] for s in shapes):
        raise ConversionError(f"node '{node.name}': inputs have different shapes {shapes}")
    return shapes[0]


def heads_shape(node: Node, shapes: list[Shape]) -> Shape:
    shape = same_shape(node, shapes)
    if shape[-1] % node.attrs["heads"]:
        raise ConversionError(f"node '{node.name}': {shape[-1]} channels not divisible by heads")
    return shape


def ceil_log2(x: float) -> int:
    return math.ceil(math.log2(x)) if x > 0 else 0


def floor_log2(x: float) -> int:
    return math.floor(math.log2(x)) if x > 0 else 0


def mantissa_exp(value: float, bits: int = 8) -> tuple[int, int]:
    """value ~ mant * 2**exp with mant in [2**(bits-2), 2**(bits-1) - 1] (or 0)."""
    if value == 0:
        return 0, 0
    exp = ceil_log2(abs(value) / (2 ** (bits - 1) - 1))
    mant = int(round(value / 2.0**exp))
    if abs(mant) > 2 ** (bits - 1) - 1:
        exp += 1
        mant = int(round(value / 2.0**exp))
    return mant, exp


def sum_inputs(ins: list[Any]) -> Any:
    """The elementwise sum of a node's inputs: a neuron's a_in (Lava sums every connection on a port), a
    residual sum."""
    total = ins[0]
    for x in ins[1:]:
        total = total + x
    return total


def tokens(x: Any) -> Any:
    """[B, ...spatial, C] -> [B, N, C] (tokens in raster order)."""
    return x.reshape(x.shape[0], -1, x.shape[-1])
