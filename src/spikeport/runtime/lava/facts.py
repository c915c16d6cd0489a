"""What spikeport knows about each Lava process class it builds: one record per class, keyed by its name.

Each op's lowering (``lowerings/<op>.py``) declares the classes that op alone creates beside its registration,
the shared builder (``lowerings/builder.py``) those several ops create; the probes a run attaches and the
synapses of lava-dl's own netx Network (``lavadl.py``) are declared here. check-hw (``runtime.loihi2``) places
and sizes every built process from its record, a run report lists the state each holds (``state.py``), and the
lowering comparison reads the state widths from here instead of copying them. Records name classes by string,
so this module and its readers import without Lava (a deploy box checks hardware readiness without it).

A class without a record is an error naming it (``PROCESSES.get``), never an empty record: a process that
holds neurons or state must not be counted as nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType

from spikeport.errors import ConversionError


class Role(Enum):
    """What a process is on Loihi 2."""

    SYNAPSE = "synapse"  # stores weights; its a_out feeds a neuron group's dendrites
    NEURON = "neuron"  # a neuron group (compartments with state)
    RELAY = "relay"  # a neuron group that forwards what it sums (GradedVec): counted as neurons
    HOST_INPUT = "host input"  # plays the input from the host
    HOST_COMPUTE = "host compute"  # computes on the host CPU every time step
    HOST_PROBE = "host probe"  # records what it reads on the host
    HOST_OUTPUT = "host output"  # no Lava process: a lowering computed on the host from recorded spikes
    EMBEDDED_IO = "embedded io"  # carries messages between the host and NeuroCores (Loihi 2's embedded processors)

    @property
    def neuron_group(self) -> bool:
        return self in (Role.NEURON, Role.RELAY)

    @property
    def on_host(self) -> bool:
        return self in (Role.HOST_INPUT, Role.HOST_COMPUTE, Role.HOST_PROBE, Role.HOST_OUTPUT, Role.EMBEDDED_IO)


class WeightStorage(Enum):
    """How a synapse process keeps its weights in a core."""

    PER_SYNAPSE = "per synapse"  # one stored weight per nonzero synapse (Sparse matrices)
    DENSE_MATRIX = "dense matrix"  # every weight of the matrix, zeros too (Lava's Dense does not cull them)
    SHARED_KERNEL = "shared kernel"  # a Conv's kernel, stored once per core (docs/loihi2_sources.md section 1)


@dataclass(frozen=True)
class ProcessFacts:
    """One Lava process class.

    ``state``: the Vars it keeps from one time step to the next, with their bits (the LavaPyType precision of
    its fixed-point model; parameters such as weights and thresholds are not state). ``input_port``: the
    InPort whose size counts its neurons (neuron groups) or its presynaptic inputs (synapses).
    ``weights`` / ``delays``: the Vars holding a synapse's weight matrix or kernel and its per-synapse delays.
    ``decays``: Vars holding decay constants the chip keeps in ``decay_bits``. ``host_only``: why it cannot
    run on a NeuroCore ("" for a process whose chip support the hardware profile lists)."""

    name: str
    role: Role
    source: str  # where the state widths and ports were read
    state: Mapping[str, int] = field(default_factory=dict)
    input_port: str | None = None
    weights: str | None = None
    storage: WeightStorage | None = None
    delays: str | None = None
    decays: tuple[str, ...] = ()
    host_only: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "state", MappingProxyType(dict(self.state)))
        if self.role.on_host != bool(self.host_only):
            raise ValueError(f"Lava process '{self.name}': a host role needs a host_only reason, and only it")
        if (self.role is Role.SYNAPSE) != (self.weights is not None and self.storage is not None):
            raise ValueError(f"Lava process '{self.name}': a synapse names its weights Var and storage, and only it")
        if (self.role is Role.SYNAPSE or self.role.neuron_group) and self.input_port is None:
            raise ValueError(f"Lava process '{self.name}': a synapse or neuron group names its input port")

    @property
    def state_bits_per_neuron(self) -> int:
        """Bits a neuron of this class keeps between steps (a neuron group's state Vars hold one value each)."""
        return sum(self.state.values())


class ProcessRegistry:
    """``class name -> ProcessFacts``; declared once per class, looked up strictly."""

    def __init__(self) -> None:
        self._facts: dict[str, ProcessFacts] = {}

    def declare(self, *facts: ProcessFacts) -> None:
        for f in facts:
            if f.name in self._facts:
                raise ValueError(f"Lava process '{f.name}' is declared twice")
            self._facts[f.name] = f

    def get(self, name: str, where: str = "") -> ProcessFacts:
        """The record of class ``name``; a ConversionError naming it (and ``where`` it was met) if none."""
        try:
            return self._facts[name]
        except KeyError:
            at = f" ({where})" if where else ""
            raise ConversionError(
                f"Lava process class '{name}'{at} has no record in spikeport.runtime.lava.facts.PROCESSES: "
                f"declare it beside the lowering that builds it; declared: {', '.join(sorted(self._facts))}"
            ) from None

    def of(self, proc: object) -> ProcessFacts:
        """The record of a built Lava process: by its module and class name where one is declared so (two Lava
        classes share the name RingBuffer), else by its class name."""
        qualified = f"{type(proc).__module__}.{type(proc).__name__}"
        if qualified in self._facts:
            return self._facts[qualified]
        return self.get(type(proc).__name__, str(getattr(proc, "name", "")))

    def __contains__(self, name: object) -> bool:
        return name in self._facts

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._facts))


PROCESSES = ProcessRegistry()

# The probes a run attaches to the network it built (runtime/lava/run.py): never part of a deployment.
PROCESSES.declare(
    ProcessFacts(
        "SpikeRecorder",
        Role.HOST_PROBE,
        "spikeport runtime/lava/procs/processes.py",
        input_port="s_in",
        host_only="spikeport probe: writes spikes to a file on the host",
    ),
    ProcessFacts(
        "StateRecorder",
        Role.HOST_PROBE,
        "spikeport runtime/lava/procs/processes.py",
        host_only="spikeport probe: reads a state Var through a RefPort and writes it to a file on the host",
    ),
)

# Not built by spikeport's lowerings: the synapses of lava-dl's own netx Network (lavadl.py, the parity target).
_LAVA_DENSE = "lava 0.10 lava/proc/dense/models.py ({})"
PROCESSES.declare(
    ProcessFacts(
        "Dense",
        Role.SYNAPSE,
        _LAVA_DENSE.format("PyDenseModelBitAcc"),
        {"a_buff": 16},
        "s_in",
        "weights",
        WeightStorage.DENSE_MATRIX,
    ),
    ProcessFacts(
        "DelayDense",
        Role.SYNAPSE,
        _LAVA_DENSE.format("PyDelayDenseModelBitAcc"),
        {"a_buff": 16},
        "s_in",
        "weights",
        WeightStorage.DENSE_MATRIX,
        delays="delays",
    ),
)
