"""Hardware readiness: which Lava processes of a converted network can go on Loihi 2, how many cores and
chips they need, the smallest Loihi 2 system that holds them, and which limit of a hardware profile a layer
breaks (DESIGN.md section 5).

The processes are the ones ``runtime.lava.backend.build_network`` really creates (the network is built, not
compiled or run: no OS process is started), so the plan cannot drift from the Lava backend. What each
process is (synapse, neuron group, host I/O...), the state it holds and its ports come from its class's record
in ``runtime.lava.facts.PROCESSES``; an undeclared class is an error.

- chip-mappable: a process type in the hardware profile's ``processes`` list (hw_profiles/loihi2.yaml: standard
  Lava processes with a Loihi 2 NeuroCore model, each with its evidence, 'verified' or 'likely', and source);
- host-only: spikeport's own processes (fixed_pt ProcessModels on the CPU), I/O, the readout.

Cores per neuron group (a neuron process with the chip synapses that feed it; Loihi keeps a neuron's
synapses in its own core): ``max(neurons / neurons_per_core, synapse bytes / synaptic_memory_per_core,
distinct inputs / fan_in_axons_per_core)``, rounded up. Sparse synapses are stored one by one (weight bits,
plus delay bits for DelaySparse); a Conv shares its kernel: with the neurons laid out channel by channel, a
core stores the kernel slices of the channels it holds, a slice once per core its channel spans
(docs/loihi2_sources.md section 1: Intel's compile logs show a conv layer's synapse memory scaling with the
kernel, not with the pixels). Limits checked per layer: one neuron's fan-in against the axons and the
synaptic memory of a core, weight mantissa bits, delay bits, decay bits.

Chips (docs/netx_and_hardware.md, "Chips and systems"): the neuron groups are packed onto chips of
``cores_per_chip`` cores in layer order; a group goes whole onto the current chip if its cores fit there,
else it starts the next chip; only a group wider than a chip spans chips (from the current chip on). The
chip count names the smallest system of the profile's ``systems`` that holds it. Spikes that cross chips:
a neuron's spike is one message per destination core; the destination cores are those holding the first to
the last neuron its synapses reach (read from the built Sparse matrices and Conv geometries); a message
whose core sits on another chip crosses. Firing per group: a run report's spike counts where one is given
and counts the group, else an assumed rate (labelled). Routing inside a chip and the compiler's own
placement are not modelled.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from spikeport.brief import brief_repr
from spikeport.chip_traffic import ChipTraffic
from spikeport.errors import ConversionError, HardwareLimitError, ProfileError
from spikeport.hw_profiles import HwProfile, load_profile
from spikeport.ir.graph import Graph
from spikeport.ir.kernels import kernel, value_kind
from spikeport.run_report import RunReport, as_dict
from spikeport.runtime import placement
from spikeport.runtime.lava.backend import leaves, release
from spikeport.runtime.lava.compat import drop_repeated_log_handlers
from spikeport.runtime.lava.facts import PROCESSES, Role, WeightStorage
from spikeport.runtime.lava.lowerings import LOWERINGS, LavaNetwork
from spikeport.runtime.lava.state import process_state
from spikeport.runtime.loihi2.drive import ChipDrive
from spikeport.runtime.loihi2.packing import LOADS, Floor, Run, limits_of, loads, network_floor, pack, shares
from spikeport.runtime.loihi2.plan import HardwarePlan, bias_pitfall, build_plan_network, pitfalls
from spikeport.runtime.placement import Wide
from spikeport.value_kinds import ANALOG

if TYPE_CHECKING:
    from spikeport.hw_profiles import ChipProcess, HwProfile, System

SCHEMA = "spikeport.check_hw"
# 2: the chips, the system, the placement and the chip-to-chip traffic; a layer wider than one chip is placed
# across chips (no longer a 'cores_per_chip' violation); processes carry their role and largest decay
# 3: the floor (totals.floor) and the packing: totals.cores counts the packed runs of groups (placement.runs),
# totals.cores_alone every group on cores of its own; each layer row its loads, floor, origin and share
SCHEMA_VERSION = 3
DEFAULT_RATE = 0.1  # spikes per neuron and step assumed where no run report counts a group's spikes


@dataclass
class ProcessInfo:
    name: str
    type: str
    layer: str  # the graph node it realises
    placement: str  # chip | host
    evidence: str  # why (model evidence, or why host-only)
    role: str = ""  # runtime.lava.facts.Role value
    neurons: int = 0
    inputs: int = 0  # distinct presynaptic neurons (synapse processes)
    synapses: int = 0  # connections (a Conv's kernel applied at every output)
    stored_weights: int = 0  # weights the chip stores: one per Sparse synapse, a Conv's kernel (see evaluate)
    storage: str = ""  # how a synapse keeps its weights (facts.WeightStorage value)
    channels: int = 0  # a Conv's output channels (its kernel has one slice per channel)
    fan_in: int = 0  # largest number of synapses into one neuron
    weight_bits: int = 0  # mantissa bits the weights need (shared exponent)
    max_delay: int = 0
    max_decay: int = 0  # the largest decay constant it keeps (facts.ProcessFacts.decays)
    feeds: list[str] = field(default_factory=list)
    payload_bits: int = 0  # bits of the graded values it reads (synapses on graded pixels), 0 for spikes
    state: list[dict[str, Any]] = field(default_factory=list)  # the Vars it keeps between steps
    state_bytes: int = 0
    origin: str = ""  # model (the float model's neuron layer or weighted synapse) | lowering (what it adds)

    @property
    def neuron_group(self) -> bool:
        return self.placement == "chip" and Role(self.role).neuron_group

    @property
    def chip_synapse(self) -> bool:
        return self.placement == "chip" and self.role == Role.SYNAPSE.value


@dataclass
class Finding:
    layer: str
    rule: str
    value: float
    limit: float
    severity: str  # violation | warning
    message: str

    def error(self, profile: str) -> HardwareLimitError:
        return HardwareLimitError(self.layer, self.rule, self.value, self.limit, profile)


@dataclass(frozen=True)
class GroupPlacement:
    """A neuron group's cores: ``cores`` consecutive core slots from ``start`` (slot // cores_per_chip is the
    chip); its neurons spread evenly over them in index order."""

    group: str  # the neuron process
    layer: str
    neurons: int
    cores: int
    start: int

    def chips(self, per_chip: int) -> list[int]:
        return placement.Slot(self.group, self.cores, self.start).bins(per_chip)

    def core_of(self, neuron: np.ndarray) -> np.ndarray:
        """The core slot of each neuron index."""
        return self.start + (neuron.astype(np.int64) * self.cores) // max(self.neurons, 1)


@dataclass(frozen=True)
class SystemFit:
    """The smallest system of the profile that holds ``chips`` chips: ``stack`` boards of ``system``."""

    system: System
    stack: int
    chips: int

    @property
    def capacity(self) -> int:
        return int(self.system.chips.si) * self.stack

    @property
    def phrase(self) -> str:
        name, form = self.system.name, self.system.form
        if self.stack > 1:
            what = f"a stack of {self.stack} {name} {form}s"
        elif form == "system":
            what = f"the {name} system"
        else:
            what = f"{'an' if name[0] in 'AEIOU' else 'a'} {name} {form}"
        return f"{what} ({self.chips} of {self.capacity:,} chip{'s' if self.capacity > 1 else ''})"

    def to_dict(self) -> dict[str, Any]:
        d = {"name": self.system.name, "form": self.system.form, "stack": self.stack, "capacity": self.capacity}
        d["chips_source"] = self.system.chips.source
        if self.stack > 1 and self.system.max_stack is not None:
            d["stack_source"] = f"{self.system.max_stack.confidence}: {self.system.max_stack.source}"
        return d


@dataclass
class HwCheck:
    profile: str
    processes: list[ProcessInfo]
    layers: list[dict[str, Any]]  # per neuron group: neurons, synapses, bytes, cores (and what drove them)
    findings: list[Finding]
    boundaries: list[dict[str, str]]  # host <-> chip connections (each needs an adapter on hardware)
    placement: list[GroupPlacement] = field(default_factory=list)
    cores_per_chip: int | None = None  # None: the profile sets none (no chips estimated)
    system: SystemFit | None = None  # None: no system of the profile holds the chips (or it lists none)
    largest_system: str = ""  # the largest system the profile lists, for the verdict when none holds it
    traffic: ChipTraffic | None = None  # spikes that cross chips (check_hw; evaluate alone leaves it None)
    plan: HardwarePlan | None = None  # what a Loihi 2 system runs (check_hw; evaluate alone leaves it None)
    floor: Floor | None = None  # the lower bound on cores (packing.py)
    runs: list[Run] = field(default_factory=list)  # the groups packed onto runs of cores (empty: each alone)
    groups_per_core: int | None = None  # the profile's neuron_groups_per_core (None: every group alone)

    BRIEF = ("profile", "verdict", "cores", "chips", "processes")  # print(check): the verdict, not every layer
    __repr__ = brief_repr

    @property
    def violations(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "violation"]

    @property
    def chips(self) -> int | None:
        if self.cores_per_chip is None:
            return None
        end = max((g.start + g.cores for g in self.placement), default=1)
        return math.ceil(end / self.cores_per_chip)

    @property
    def cores(self) -> int:
        """The cores the packed placement uses (every group alone where nothing is packed)."""
        return int(sum(run.cores for run in self.runs)) if self.runs else self.cores_alone

    @property
    def cores_alone(self) -> int:
        """The cores with every neuron group on cores of its own (before packing)."""
        return int(sum(layer["cores"] for layer in self.layers))

    @property
    def ratio(self) -> float | None:
        """The placement's cores over the floor."""
        return self.cores / self.floor.cores if self.floor is not None else None

    @property
    def verdict(self) -> str:
        """The one summary line: what the network fits (and its cores against the floor), or why it fits nothing."""
        floor = f", {self.ratio:.2f}x the floor of {self.floor.cores:,}" if self.floor and self.ratio else ""
        size = f"~{self.cores:,} cores" + (f" on {self.chips} chips" if self.chips else "")
        if self.violations:
            first = self.violations[0]
            return (
                f"FAILS: {len(self.violations)} limit(s) of profile {self.profile} broken "
                f"(first: layer '{first.layer}', rule '{first.rule}'); {size}{floor}"
            )
        warned = len(self.findings) - len(self.violations) + (len(self.plan.warnings) if self.plan else 0)
        pitfalls = len(self.plan.pitfalls) if self.plan else 0
        said = [f"{n} {word}{'s' if n > 1 else ''}" for n, word in ((warned, "warning"), (pitfalls, "pitfall")) if n]
        caveat = f" ({', '.join(said)} above)" if said else ""  # said, not buried
        if self.chips is None:
            ok = (
                f"OK: ~{self.cores:,} cores{floor} (profile {self.profile} sets no cores_per_chip: chips not estimated)"
            )
        elif self.system is not None:
            ok = f"OK: fits {self.system.phrase}, ~{self.cores:,} cores{floor}"
        else:
            ok = f"OK: {size} (profile {self.profile} lists no systems)"
        return ok + caveat

    def raise_for_violations(self) -> None:
        if self.violations:
            raise self.violations[0].error(self.profile)

    def by_layer(self) -> dict[str, dict[str, Any]]:
        """The neuron groups summed per graph node (a lowering may build several), with the chips they use."""
        out: dict[str, dict[str, Any]] = {}
        placed = {g.group: g for g in self.placement}
        for row in self.layers:
            zero = dict.fromkeys(("neurons", "synapses", "stored_weights", "cores", "floor", "share"), 0)
            est = out.setdefault(row["layer"], {**row, **zero, "chips": []})
            for key in zero:
                est[key] += row[key]
            est["fan_in"] = max(est["fan_in"], row["fan_in"])
            if self.cores_per_chip and row["group"] in placed:
                est["chips"] = sorted({*est["chips"], *placed[row["group"]].chips(self.cores_per_chip)})
        return out

    def to_dict(self) -> dict[str, Any]:
        chip = [p for p in self.processes if p.placement == "chip"]
        per_chip = self.cores_per_chip
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "profile": self.profile,
            "ok": not self.violations,
            "verdict": self.verdict,
            "totals": {
                "processes": len(self.processes),
                "chip_mappable": len(chip),
                "host_only": len(self.processes) - len(chip),
                "cores": self.cores,
                "cores_alone": self.cores_alone,
                "floor": None if self.floor is None else self.floor.to_dict(),
                "ratio_to_floor": None if self.ratio is None else round(self.ratio, 3),
                "neurons_model": int(sum(layer["model_neurons"] for layer in self.layers)),
                "synapses_model": int(sum(p.synapses for p in chip if p.origin == "model")),
                "chips": self.chips,
                "neurons_on_chip": int(sum(layer["neurons"] for layer in self.layers)),
                "synapses_on_chip": int(sum(layer["synapses"] for layer in self.layers)),
                "weights_stored_on_chip": int(sum(layer["stored_weights"] for layer in self.layers)),
                "host_chip_boundaries": len(self.boundaries),
                "host_computing": [p.name for p in self.processes if p.role == Role.HOST_COMPUTE.value],
                "state_bytes_on_chip": int(sum(p.state_bytes for p in chip)),
                "state_bytes_on_host": int(sum(p.state_bytes for p in self.processes if p not in chip)),
            },
            "system": None if self.system is None else self.system.to_dict(),
            "placement": {
                "cores_per_chip": per_chip,
                "groups_per_core": self.groups_per_core,
                "rule": "layer order; up to groups_per_core consecutive groups share a run of cores (the fewest cores "
                "in all); a run goes whole onto the current chip if it fits, else starts the next; only a run wider "
                "than a chip spans chips",
                "runs": [{"groups": [self.layers[i]["group"] for i in r.rows], "cores": r.cores} for r in self.runs],
                "chips": [] if not per_chip else self.chip_loads(),
                "groups": [asdict(g) | {"chips": g.chips(per_chip) if per_chip else []} for g in self.placement],
            },
            "traffic": None if self.traffic is None else self.traffic.to_dict(),
            "plan": None if self.plan is None else self.plan.to_dict(),
            "processes": [asdict(p) for p in self.processes],
            "layers": self.layers,
            "findings": [asdict(f) for f in self.findings],
            "boundaries": self.boundaries,
        }

    def chip_loads(self) -> list[dict[str, Any]]:
        """Per chip: its cores in use and the first and last layer on it."""
        assert self.cores_per_chip
        per_chip = self.cores_per_chip
        loads: dict[int, dict[str, Any]] = {}
        for g in self.placement:  # groups packed into one run share its slots: a slot counts once
            for slot in range(g.start, g.start + g.cores):
                load = loads.setdefault(slot // per_chip, {"chip": slot // per_chip, "slots": set(), "layers": []})
                load["slots"].add(slot)
                if not load["layers"] or load["layers"][-1] != g.layer:
                    load["layers"].append(g.layer)
        return [
            {"chip": c, "cores": len(d["slots"]), "first": d["layers"][0], "last": d["layers"][-1]}
            for c, d in sorted(loads.items())
        ]


def mantissa_bits(w: np.ndarray) -> int:
    """Bits of the integer mantissa the weights need once their common power of two is an exponent."""
    w = np.asarray(w, np.int64)
    w = w[w != 0]
    if not w.size:
        return 0
    tz = 0
    while tz < 32 and not np.any(w & ((1 << (tz + 1)) - 1)):
        tz += 1
    m = w >> tz
    if m.min() >= 0:
        return int(m.max()).bit_length()
    return max(int(-m.min() - 1).bit_length(), int(m.max()).bit_length()) + 1


def _downstream(port: Any) -> Iterator[Any]:  # Lava ports (untyped)
    from lava.magma.core.process.ports.ports import AbstractVirtualPort

    for c in port.out_connections:
        if isinstance(c, AbstractVirtualPort):
            yield from _downstream(c)
        else:
            yield c


def source_node(graph: Graph) -> str:
    """The graph's input: the node that reads no other node."""
    sources = [name for name in graph.order if not graph.nodes[name].inputs]
    if len(sources) != 1:
        raise ConversionError(f"check-hw needs a graph with one input node; this one has {sources or 'none'}")
    return sources[0]


def _layer_of(graph: Graph, proc: Any) -> str:
    if PROCESSES.of(proc).role is Role.HOST_INPUT:  # the input RingBuffer (Lava names it by its class)
        return source_node(graph)
    name: str = proc.name.split("<-")[0]
    while name not in graph.nodes and "." in name:  # a part of a node's lowering: 'x.window', 'x.product'
        name = name.rsplit(".", 1)[0]
    return name


def origin(graph: Graph, layer: str, name: str, role: Role) -> str:
    """'model' for the float model's own parts, 'lowering' for what the lowering adds beyond them: a neuron group
    is the model's when it is a graph node's own process and that node holds neuron state (a LIF layer; not a
    residual sum's relay, a max-pool's window neurons, a coincidence, product or partial-sum neuron); a synapse
    when it carries a graph node's weights into that node's own output (its process, or the input synapse named
    '<node><-<source>')."""
    node = graph.nodes.get(layer)
    if node is None:
        return "lowering"
    if role.neuron_group:
        return "model" if name == layer and kernel(node.op).state_bytes(node) > 0 else "lowering"
    own = name == layer or name.startswith(f"{layer}<-")
    return "model" if role is Role.SYNAPSE and own and "weight_mant" in node.params else "lowering"


def kernel_copies(proc: ProcessInfo, neurons_per_core: float | None) -> int:
    """How many times a Conv's kernel slices are stored: once per core a channel's outputs span (1 for a
    Sparse, whose synapses are each stored once)."""
    if proc.storage != WeightStorage.SHARED_KERNEL.value or not proc.channels or not neurons_per_core:
        return 1
    outputs_per_channel = proc.synapses // max(proc.fan_in, 1) // proc.channels
    return max(1, math.ceil(outputs_per_channel / neurons_per_core))


def chip_processes(prof: HwProfile | None = None) -> dict[str, ChipProcess]:
    """The process types a profile runs on the chip (its ``processes`` list; loihi2's when it has none)."""
    return (prof.processes if prof is not None else {}) or load_profile("loihi2").processes


def describe_processes(
    graph: Graph, net: LavaNetwork, prof: HwProfile | None = None, host_readout: bool = True
) -> list[ProcessInfo]:
    """One ProcessInfo per process of a built LavaNetwork (placement, size, fan-in, weight/delay bits); with
    ``host_readout``, one more for each op computed on the host from recorded spikes (the simulation network's
    readout; the hardware plan reads its outputs through sinks instead)."""
    from scipy import sparse

    chip = chip_processes(prof)
    out: list[ProcessInfo] = []
    for p in net.processes:
        kind = type(p).__name__
        facts = PROCESSES.of(p)
        layer = _layer_of(graph, p)
        name = f"{layer}.source" if facts.role is Role.HOST_INPUT else p.name  # Lava's default name says nothing
        on_chip = kind in chip and not facts.host_only
        info = ProcessInfo(
            name,
            kind,
            layer,
            "chip" if on_chip else "host",
            f"{chip[kind].kind} process, {chip[kind].evidence}: {chip[kind].source}"
            if on_chip
            else facts.host_only or "not in the profile's list of chip processes",
            role=facts.role.value,
        )
        info.origin = origin(graph, layer, name, facts.role)
        info.feeds = sorted({c.process.name for port in p.out_ports for c in _downstream(port)})
        info.state = process_state(p)
        info.state_bytes = sum(s["bytes"] for s in info.state)
        info.max_decay = max((int(np.max(getattr(p, var).init)) for var in facts.decays), default=0)
        if facts.role.neuron_group:
            assert facts.input_port is not None  # ProcessFacts requires one
            info.neurons = int(np.prod(getattr(p, facts.input_port).shape))
        if facts.role is Role.SYNAPSE:
            assert facts.input_port is not None and facts.weights is not None and facts.storage is not None
            info.inputs = int(np.prod(getattr(p, facts.input_port).shape))
            info.storage = facts.storage.value
        if facts.storage is WeightStorage.PER_SYNAPSE:
            w = sparse.csr_matrix(getattr(p, str(facts.weights)).init)
            w.eliminate_zeros()
            info.synapses, info.fan_in = int(w.nnz), int(np.diff(w.indptr).max(initial=0))
            info.stored_weights = info.synapses
            info.weight_bits = mantissa_bits(w.data)
            src = graph.nodes[layer].inputs[0] if layer in graph.nodes and graph.nodes[layer].inputs else None
            if src is not None and value_kind(graph, src) == ANALOG:  # the stem: pixels as graded spikes
                info.payload_bits = int(graph.nodes[src].attrs["bits"])
            if facts.delays:
                info.max_delay = int(sparse.csr_matrix(getattr(p, facts.delays).init).max())
        elif facts.storage is WeightStorage.SHARED_KERNEL:
            w = np.asarray(getattr(p, str(facts.weights)).init)
            info.fan_in = int(np.prod(w.shape[1:]))
            info.synapses = int(np.prod(p.a_out.shape)) * info.fan_in
            info.stored_weights = int(w.size)  # the shared kernel (docs/loihi2_sources.md section 1)
            info.channels = int(w.shape[0])
            info.weight_bits = mantissa_bits(w)
        out.append(info)
    for node in (graph.nodes[n] for n in graph.order):
        if not host_readout or not LOWERINGS.get(node.op, node.name).on_host:
            continue
        out.append(
            ProcessInfo(
                node.name,
                node.op,
                node.name,
                "host",
                f"host numpy {node.op} (no Lava process)",
                role=Role.HOST_OUTPUT.value,
            )
        )
        for src in (leaf for s in node.inputs for leaf in leaves(graph, s)):  # it reads their recorded spikes
            next(p for p in out if p.name == src).feeds.append(node.name)
    return out


def check_hw(
    graph: Graph,
    profile: str | Path | HwProfile = "loihi2",
    run_report: RunReport | dict[str, Any] | None = None,
    rate: float = DEFAULT_RATE,
    drive: ChipDrive | str | None = None,
    states: Sequence[str] = (),
) -> HwCheck:
    """Build the graph's hardware plan (``plan.py``: its Lava processes, not run) and check it against ``profile``
    (name, path or HwProfile); ``drive`` and ``states`` as the plan takes them.

    The spikes that cross chips are counted from ``run_report``'s per-layer spikes where it counts a neuron
    group, and at ``rate`` spikes per neuron and step elsewhere (the result says which)."""
    if not 0 <= rate <= 1:
        raise ValueError(f"rate {rate} is not a probability")
    prof = profile if isinstance(profile, HwProfile) else load_profile(profile)
    if not prof.has("limits", "neurons_per_core"):  # cores are counted in neurons per core, at the least
        raise ProfileError(
            f"{prof.path}: profile '{prof.name}' ({prof.kind}) has no chip limits (limits.neurons_per_core): check-hw "
            "maps a network onto neuromorphic cores; use a profile with a 'limits' section (loihi2, loihi1)"
        )
    built = build_plan_network(graph, drive, states)
    procs = describe_processes(graph, built.net, prof, host_readout=False)
    result = evaluate(graph, procs, prof)
    result.traffic = chip_traffic(graph, built.net, result, run_report, rate)
    built.plan.pitfalls = pitfalls(built.net, result.cores) + bias_pitfall(built.plan)
    result.plan = built.plan
    release(built.net.processes)  # Lava's servers and logger would keep them for the life of the interpreter
    drop_repeated_log_handlers()
    return result


def limit_basis(prof: HwProfile, key: str) -> str:
    """'' for a firm limit (``Quantity.firm``); else '; the limit is <confidence>: <source>' to append to a
    finding's message: the rule is still checked, and a FAIL on a derived limit can be weighed."""
    q = prof.get("limits", key)
    if q is None or q.firm:
        return ""
    return f"; the limit is {q.confidence}: {q.source}"


def _limit(prof: HwProfile, key: str) -> float | None:
    return prof.si("limits", key) if prof.has("limits", key) else None


LIMITS = (  # the profile's limits check-hw reads (each None where the profile sets none)
    "neurons_per_core",
    "synaptic_memory_per_core",
    "fan_in_axons_per_core",
    "weight_bits",
    "delay_bits",
    "decay_bits",
    "cores_per_chip",
    "state_bits",
    "neuron_groups_per_core",
)


@dataclass
class Rules:
    """The limits of a profile, and the findings of the rules checked against them."""

    prof: HwProfile
    lim: dict[str, float | None]
    loads: dict[str, float | None]  # the limits a neuron group's three loads are divided by (packing.LOADS)
    findings: list[Finding] = field(default_factory=list)

    @classmethod
    def of(cls, prof: HwProfile) -> Rules:
        return cls(prof, {k: _limit(prof, k) for k in LIMITS}, limits_of(prof))

    def broken(
        self, layer: str, key: str, value: float, limit: float, message: str, severity: str = "violation"
    ) -> None:
        """A finding: ``layer`` breaks ``key`` (its message says how firm the limit is)."""
        self.findings.append(Finding(layer, key, value, limit, severity, message + limit_basis(self.prof, key)))


def evaluate(graph: Graph, procs: list[ProcessInfo], prof: HwProfile) -> HwCheck:
    """``procs`` (``describe_processes``) against ``prof``: each neuron group's cores and the limits it breaks,
    each chip process's bits, the host <-> chip boundaries, the floor under the cores and the groups packed onto
    runs of cores (``packing.py``), then the runs placed on chips and the smallest system that holds them (the
    spikes that cross chips and the hardware plan are ``check_hw``'s)."""
    rules = Rules.of(prof)
    layers = []
    for group in (p for p in procs if p.neuron_group):
        syn = [p for p in procs if group.name in p.feeds and p.chip_synapse]
        layers.append(group_cores(group, syn, rules))
        check_group(group, syn, rules)
    check_processes(procs, rules)
    per_chip = int(rules.lim["cores_per_chip"]) if rules.lim["cores_per_chip"] else None
    per_core = int(rules.lim["neuron_groups_per_core"]) if rules.lim["neuron_groups_per_core"] else None
    result = HwCheck(
        prof.name, procs, layers, rules.findings, boundaries(procs), cores_per_chip=per_chip, groups_per_core=per_core
    )
    result.floor = network_floor(layers, prof)
    result.runs = pack(layers, rules.loads, per_core)
    for row, share in zip(layers, shares(result.runs, layers, rules.loads), strict=True):
        row["share"] = round(share, 3)  # the group's part of its run's cores
    if per_chip is not None:
        place_on_system(result, per_chip, rules)
    return result


def _bits(syn: list[ProcessInfo], lim: dict[str, float | None]) -> float:
    """Bits a stored synapse takes: its weight, plus its delay where any synapse of the group is delayed."""
    return (lim["weight_bits"] or 8) + (lim["delay_bits"] or 0) * any(p.max_delay for p in syn)


def group_cores(group: ProcessInfo, syn: list[ProcessInfo], rules: Rules) -> dict[str, Any]:
    """A neuron group's row: its neurons, the chip synapses ``syn`` that feed it, the bytes they take and the cores
    that hold it alone (the largest of what neurons, synaptic memory and fan-in axons each need), the float model's
    share of each (``origin``) and the group's floor (its largest load in cores, unrounded)."""
    lim = rules.lim
    bits = _bits(syn, lim)
    # Sparse synapses are stored one by one and split across cores. A Conv's kernel is shared: a core
    # stores the kernel slices of the output channels its neurons hold, a slice once per core its channel
    # spans. That assumes the compiler splits a Conv-fed group by feature ([inferred] from lava's
    # ConvInVarModel(x_split, f_split), docs/loihi2_sources.md section 1); in the raster order of the
    # Lava process every core would need the whole kernel
    stored = {p.name: p.stored_weights * kernel_copies(p, lim["neurons_per_core"]) for p in syn}
    shared = WeightStorage.SHARED_KERNEL.value
    kernel_bytes = sum(stored[p.name] for p in syn if p.storage == shared) * bits / 8
    syn_bytes = sum(stored[p.name] for p in syn if p.storage != shared) * bits / 8
    model_syn = [p for p in syn if p.origin == "model"]
    drivers = {
        "neurons_per_core": _ceil(group.neurons, lim["neurons_per_core"]),
        "synaptic_memory_per_core": _ceil(syn_bytes + kernel_bytes, lim["synaptic_memory_per_core"]),
        "fan_in_axons_per_core": _ceil(sum(p.inputs for p in syn), lim["fan_in_axons_per_core"]),
    }
    row: dict[str, Any] = {
        "layer": group.layer,
        "group": group.name,
        "neurons": group.neurons,
        "synapses": int(sum(p.synapses for p in syn)),
        "stored_weights": int(sum(stored.values())),
        "synapse_bytes": int(syn_bytes + kernel_bytes),
        "fan_in": sum(p.fan_in for p in syn),
        "cores": max(1, *drivers.values()),
        "cores_by": max(drivers, key=lambda k: drivers[k]),
        "synapse_processes": [p.name for p in syn],
        "inputs": sum(p.inputs for p in syn),
        "origin": group.origin,
        "model_neurons": group.neurons if group.origin == "model" else 0,
        "model_synapse_bytes": int(sum(stored[p.name] for p in model_syn) * bits / 8),
        "model_inputs": sum(p.inputs for p in model_syn),
    }
    own = loads(row, rules.loads)
    row["floor"] = round(max(own), 3)
    row["floor_by"] = [limit for _, limit in LOADS][own.index(max(own))]
    return row


def check_group(group: ProcessInfo, syn: list[ProcessInfo], rules: Rules) -> None:
    """What one neuron of the group reads against a core (axons, synaptic memory), and the worst-case sums of its
    graded synapses against the chip's accumulator (a warning)."""
    lim, fan_in, bits = rules.lim, sum(p.fan_in for p in syn), _bits(syn, rules.lim)
    axons, memory, state = lim["fan_in_axons_per_core"], lim["synaptic_memory_per_core"], lim["state_bits"]
    if axons and fan_in > axons:
        rules.broken(
            group.layer,
            "fan_in_axons_per_core",
            fan_in,
            axons,
            f"one neuron reads {fan_in} inputs; a core receives at most {axons:g} axons",
        )
    if memory and fan_in * bits / 8 > memory:
        rules.broken(
            group.layer,
            "synaptic_memory_per_core",
            fan_in * bits / 8,
            memory,
            f"the synapses of one neuron need {fan_in * bits / 8:g} B, more than a core's synaptic memory",
        )
    for p in syn:
        worst = p.payload_bits + p.weight_bits + math.ceil(math.log2(max(p.fan_in, 1))) if p.payload_bits else 0
        if state and worst > state:
            rules.broken(
                group.layer,
                "graded_accumulator_bits",
                worst,
                state,
                f"{p.name} sums {p.payload_bits}-bit graded inputs x {p.weight_bits}-bit weights over a fan-in "
                f"of {p.fan_in}: the worst case needs {worst} bits; the chip's accumulator may saturate where "
                "the CPU model does not (calibrated sums usually stay far below)",
                severity="warning",
            )


def check_processes(procs: list[ProcessInfo], rules: Rules) -> None:
    """Each chip process's weight mantissa, delays and decay constants against the bits the chip keeps."""
    lim = rules.lim
    for p in (p for p in procs if p.placement == "chip"):
        if lim["weight_bits"] and p.weight_bits > lim["weight_bits"]:
            rules.broken(
                p.layer,
                "weight_bits",
                p.weight_bits,
                lim["weight_bits"],
                f"process '{p.name}': weights need a {p.weight_bits}-bit mantissa",
            )
        if lim["delay_bits"] and p.max_delay > 2 ** lim["delay_bits"] - 1:
            rules.broken(
                p.layer,
                "delay_bits",
                p.max_delay,
                2 ** lim["delay_bits"] - 1,
                f"process '{p.name}': delay {p.max_delay} steps does not fit {lim['delay_bits']:g} bits",
            )
        if lim["decay_bits"] and p.max_decay > 2 ** lim["decay_bits"] - 1:
            rules.broken(
                p.layer,
                "decay_bits",
                p.max_decay,
                2 ** lim["decay_bits"] - 1,
                f"process '{p.name}': decay constant {p.max_decay} does not fit {lim['decay_bits']:g} bits",
            )


def boundaries(procs: list[ProcessInfo]) -> list[dict[str, str]]:
    """The connections between a host process and a chip process (each needs an adapter on hardware)."""
    by_name = {p.name: p for p in procs}
    return [
        {"from": p.name, "to": q, "direction": f"{p.placement}->{by_name[q].placement}"}
        for p in procs
        for q in p.feeds
        if q in by_name and by_name[q].placement != p.placement
    ]


def place_on_system(result: HwCheck, per_chip: int, rules: Rules) -> None:
    """The neuron groups placed on chips of ``per_chip`` cores, and the smallest system of the profile that holds
    them (a violation where none does)."""
    prof = rules.prof
    result.placement = place(result.layers, per_chip, result.runs)
    chips = result.chips or 1
    result.system = smallest_system(prof.systems, chips)
    if not prof.systems:
        return
    largest = max(prof.systems, key=lambda s: _capacity(s))
    result.largest_system = f"{largest.name} ({_capacity(largest):,} chips)"
    if result.system is None:
        rules.broken(
            "<network>",
            "chips",
            chips,
            _capacity(largest),
            f"the chip-mappable part needs {chips} chips of {per_chip} cores; the largest system of profile "
            f"{prof.name} is {result.largest_system}",
        )


def place(layers: list[dict[str, Any]], per_chip: int, runs: Sequence[Run] = ()) -> list[GroupPlacement]:
    """Neuron groups onto chips of ``per_chip`` cores, in layer order, a run of packed groups at a time (``runs``;
    default every group its own run) by ``runtime.placement``'s rule (the partitioned Lava run's too): the run
    whole onto the current chip if its cores fit there, else from the start of the next chip; a run wider than a
    chip spans chips from the current one on. The groups of a run share its cores (each spread over all of them)."""
    runs = runs or [Run((i,), row["cores"]) for i, row in enumerate(layers)]
    plan = placement.place([(layers[run.rows[0]]["group"], run.cores) for run in runs], per_chip, Wide.SPAN)
    return [
        GroupPlacement(layers[i]["group"], layers[i]["layer"], layers[i]["neurons"], slot.size, slot.start)
        for run, slot in zip(runs, plan.slots, strict=True)
        for i in run.rows
    ]


def _capacity(system: System) -> int:
    return int(system.chips.si * (system.max_stack.si if system.max_stack is not None else 1))


def smallest_system(systems: tuple[System, ...], chips: int) -> SystemFit | None:
    """The system with the fewest chips that holds ``chips``: a board, a stack of boards (up to its
    ``max_stack``), or a whole system; None if none does."""
    fits = []
    for s in systems:
        per = int(s.chips.si)
        stack = max(1, math.ceil(chips / per))
        if stack == 1 or (s.max_stack is not None and stack <= s.max_stack.si):
            fits.append(SystemFit(s, stack, chips))
    return min(fits, key=lambda f: (f.capacity, f.stack), default=None)


def _ceil(x: float, per: float | None) -> int:
    return int(math.ceil(x / per)) if per else 0


# ------------------------------------------------------------------------------- spikes that cross chips
def _reach(proc: Any) -> tuple[np.ndarray, np.ndarray]:
    """For each presynaptic neuron of a built synapse process, the first and last postsynaptic neuron (flat
    index) it reaches; lo > hi where it reaches none."""
    facts = PROCESSES.of(proc)
    if facts.storage is WeightStorage.SHARED_KERNEL:
        return _conv_reach(proc)
    from scipy import sparse

    w = sparse.csc_matrix(getattr(proc, str(facts.weights)).init)
    w.eliminate_zeros()
    w.sort_indices()
    n_out, n_in = w.shape
    lo, hi = np.full(n_in, n_out, np.int64), np.full(n_in, -1, np.int64)
    has = np.diff(w.indptr) > 0
    lo[has] = w.indices[w.indptr[:-1][has]]
    hi[has] = w.indices[w.indptr[1:][has] - 1]
    return lo, hi


def _conv_reach(proc: Any) -> tuple[np.ndarray, np.ndarray]:
    """A Lava Conv's reach from its geometry: input (x, y, z) feeds the outputs (x', y') whose window covers
    it, every output channel of z's group; flat indices in Lava's (X, Y, Z) raster order."""
    (X, Y, Z), (Xo, Yo, Zo) = proc.input_shape, proc.output_shape
    weight = np.asarray(proc.weight.init)
    k = weight.shape[1:3]
    pad, stride, dil = (
        np.broadcast_to(np.asarray(v.init).ravel(), (2,)) for v in (proc.padding, proc.stride, proc.dilation)
    )
    groups = int(np.asarray(proc.groups.init).ravel()[0])
    x, y, z = np.unravel_index(np.arange(X * Y * Z), (X, Y, Z))
    span = []
    for pos, axis, size in ((x, 0, Xo), (y, 1, Yo)):  # output o reads o * stride - pad + i * dilation, i < k
        first, last = np.full(pos.shape, size, np.int64), np.full(pos.shape, -1, np.int64)
        for tap in range(k[axis]):
            offset = pos + pad[axis] - tap * dil[axis]
            out = offset // stride[axis]
            hit = (offset >= 0) & (offset % stride[axis] == 0) & (out < size)
            first, last = np.where(hit, np.minimum(first, out), first), np.where(hit, np.maximum(last, out), last)
        span.append((first, last))
    (xlo, xhi), (ylo, yhi) = span
    zlo = (z // (Z // groups)) * (Zo // groups)
    lo = (xlo * Yo + ylo) * Zo + zlo
    hi = (xhi * Yo + yhi) * Zo + zlo + Zo // groups - 1
    none = (xlo > xhi) | (ylo > yhi)
    return np.where(none, Xo * Yo * Zo, lo).astype(np.int64), np.where(none, -1, hi).astype(np.int64)


def spike_rates(graph: Graph, run_report: RunReport | dict[str, Any] | None) -> dict[str, float]:
    """Spikes per neuron and step of every graph node a run report counts (its spiking layers), and of the
    residual sums over them (a sum is nonzero only where an input is: the sum of its inputs' rates, at most 1)."""
    if run_report is None:
        return {}
    report = as_dict(run_report)
    samples = max(int(report.get("samples") or 1), 1)
    rates: dict[str, float] = {}
    for row in report.get("layers", []):
        spikes, neurons = row.get("spikes") or [], int(row.get("neurons") or 0)
        if neurons and sum(spikes) and row.get("name") in graph.nodes:
            rates[row["name"]] = min(1.0, sum(spikes) / (samples * len(spikes) * neurons))
    for name in graph.order:
        node = graph.nodes[name]
        if LOWERINGS.get(node.op, name).relay_if_read and node.inputs and all(s in rates for s in node.inputs):
            rates[name] = min(1.0, sum(rates[s] for s in node.inputs))
    return rates


def chip_traffic(
    graph: Graph,
    net: LavaNetwork,
    check: HwCheck,
    run_report: RunReport | dict[str, Any] | None = None,
    rate: float = DEFAULT_RATE,
) -> ChipTraffic | None:
    """Spike messages per step that cross chips in ``check``'s placement (None: no chips estimated)."""
    per_chip, chips = check.cores_per_chip, check.chips
    if per_chip is None or chips is None:
        return None
    placed = {g.group: g for g in check.placement}
    built = {p.name: p for p in net.processes}
    published = {port.process.name for port in (*net.spike_out.values(), *net.stream_out.values())}
    rates = spike_rates(graph, run_report)
    measured = crossing = 0.0
    by_layer: dict[str, float] = {}
    if chips > 1:
        for src in (p for p in check.processes if p.name in placed):
            counted = src.name in published and src.layer in rates  # the node's own output, counted by the run
            src_rate = rates[src.layer] if counted else rate
            a = placed[src.name]
            src_chip = a.core_of(np.arange(a.neurons)) // per_chip
            for syn in (s for s in check.processes if s.name in src.feeds and s.chip_synapse):
                lo, hi = _reach(built[syn.name])
                for b in (placed[t] for t in syn.feeds if t in placed):
                    first, last = b.core_of(np.clip(lo, 0, None)), b.core_of(np.clip(hi, 0, None))
                    own_lo, own_hi = src_chip * per_chip, (src_chip + 1) * per_chip - 1
                    local = np.clip(np.minimum(last, own_hi) - np.maximum(first, own_lo) + 1, 0, None)
                    messages = np.where(lo <= hi, last - first + 1 - local, 0)
                    sent = src_rate * float(messages.sum())
                    crossing += sent
                    measured += sent if counted else 0.0
                    by_layer[src.layer] = by_layer.get(src.layer, 0.0) + sent
    report = None if run_report is None else as_dict(run_report)
    source = (
        f"spike counts of a {report.get('executor', '?')} run report ({report.get('samples', '?')} samples); "
        f"{rate:g} spikes per neuron and step assumed for the groups it does not count"
        if report is not None
        else f"estimate: every neuron group fires {rate:g} spikes per neuron and step (no run report given)"
    )
    share = measured / crossing if crossing else float(report is not None or chips == 1)
    ranked = dict(sorted(((k, v) for k, v in by_layer.items() if v), key=lambda kv: -kv[1]))
    return ChipTraffic(chips, crossing, graph.T, source, share, rate, ranked)
