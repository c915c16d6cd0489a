"""The chip model: how Lava's Loihi 2 compiler cuts a neuron group into cores, fitted to the compile tables it printed
for lava-dl's public networks (``hw_profiles/compile_tables/``; docs/netx_and_hardware.md, "The core model").

What the tables show, and what this module does with it:

- **A core's budgets** (the ``limits`` of hw_profiles/loihi2.yaml): 4,095 neurons (YOLO-KP's 3,584-neuron blocks are
  "87.52 %" = 3,584 / 4,095; PilotNet's 16 x 4 x 64 = 4,096 block was not taken), 12,000 ``SynMem`` units (the
  partitioner's own register budget, in its messages) and 16,000 ``AxonIn`` entries (MNIST's 784 inputs are
  "4.90 %").
- **Synaptic memory in SynMem units**, two formats. A weight matrix (Lava ``Dense``, ``Sparse``; a ``Conv`` whose
  output is one position, which has no kernel to share) keeps one list per input axon and core: ``ceil((s x (bits +
  extra) + header) / unit)`` units for the ``s`` synapses the axon has on the core, ``bits`` the weights' field
  (1-6 or 8 bits: a 7-bit weight takes 8) plus the delay's where there is one; ``Dense`` stores its zeros, ``Sparse``
  does not. A shared kernel (``Conv``) keeps, per core, each of its rows (input channel x kernel position) for the
  core's output channels: ``ceil(channels / kernel_weights_per_unit) + kernel_row_header`` units a row. The fitted
  constants are the profile's ``core_model`` section.
- **The cut.** A group on a spatial map (W, H, C) fed by kernels only is cut into blocks of ``W_b`` (a power of
  two) x ``H_b`` x ``C_b`` (``H`` and ``C`` halved, rounded up), the block with the fewest cores that fits all three
  budgets (PilotNet: 99 x 32 x 24 in 25 blocks of 4 x 32 x 24; YOLO-KP: 14 x 14 x 512 in 32 blocks of 8 x 7 x 64,
  its kernel too large for 128 channels a core). Any other group is split along its neurons the way the
  partitioner's messages show: the fullest core's overflow ``r = ceil(load / budget)`` splits every piece into
  ``r``, until the largest piece fits (PilotNet's dense layer: 61,440 units -> 6 pieces -> 12,800 -> 12 cores).
- **One group a core set**: the tables never put two layers on one core (PilotNet's one-neuron output layer has a
  core of its own), so a network's cores are the sum of its groups'.

``GroupFit.lower_bound`` is what no cut can go under with the same budgets (the group's neurons, its synapses stored
once and its input axons, each over a core's budget): the compiler's cut sits above it. Neuron models and synapse
formats no public table covers are marked ``extrapolated`` with why, and their cores are given as a range: the
high end assumes their neurons take ``unfitted_state_factor`` times a CUBA neuron's share of a core.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from spikeport.errors import ProfileError

if TYPE_CHECKING:
    from scipy import sparse

    from spikeport.hw_profiles import HwProfile

# Loihi's weight field sizes (nengo-loihi's SynapseFmt.WEIGHT_BITS_MAP for Loihi 1); fitted for Loihi 2: Oxford's
# 7-bit layer costs per synapse what its 8-bit layer does.
WEIGHT_FIELD_BITS = (0, 1, 2, 3, 4, 5, 6, 8)
# The neuron and synapse processes the public tables compiled (netx CUBA -> LIF / LIFReset, SDNN -> SigmaDelta /
# Sigma; Dense, Conv): their cores are fitted, every other one extrapolated.
FITTED_NEURONS = frozenset({"LIF", "LIFReset", "SigmaDelta", "Sigma"})
FITTED_SYNAPSES = frozenset({"Dense", "Conv"})
BUDGETS = ("neurons", "synaptic memory", "input axons")
MAX_SPLITS = 64  # rounds of the partitioner's split; a group that still overflows after them cannot be placed


def weight_field(bits: int) -> int:
    """The weight field a ``bits``-bit mantissa is stored in."""
    return next((f for f in WEIGHT_FIELD_BITS if f >= bits), bits)


@dataclass(frozen=True)
class CoreModel:
    """A core's budgets and the synapse formats' constants (the profile's ``limits`` and ``core_model``)."""

    neurons: int  # neurons a core holds
    synmem: int  # SynMem units a core holds
    axons_in: int  # AxonIn entries a core holds
    extra_bits: int  # bits a stored synapse takes beside its weight (a matrix's list)
    header_bits: int  # bits of one axon's list on one core
    unit_bits: int  # bits of one SynMem unit (a fit, not a memory word)
    kernel_weights_per_unit: int
    kernel_row_header: int  # units of each kernel row
    unfitted_state_factor: float  # the high end of an extrapolated neuron model's share of a core

    @classmethod
    def of(cls, prof: HwProfile) -> CoreModel:
        def get(section: str, key: str) -> float:
            if not prof.has(section, key):
                raise ProfileError(
                    f"{prof.path}: profile '{prof.name}' has no {section}.{key}: check-hw's core model needs it "
                    "(hw_profiles/loihi2.yaml shows each with what it was fitted on)"
                )
            return prof.si(section, key)

        return cls(
            neurons=int(get("limits", "neurons_per_core")),
            synmem=int(get("limits", "synmem_units_per_core")),
            axons_in=int(get("limits", "fan_in_axons_per_core")),
            extra_bits=int(get("core_model", "synapse_extra_bits")),
            header_bits=int(get("core_model", "synapse_list_header_bits")),
            unit_bits=int(get("core_model", "synmem_unit_bits")),
            kernel_weights_per_unit=int(get("core_model", "kernel_weights_per_unit")),
            kernel_row_header=int(get("core_model", "kernel_row_header_units")),
            unfitted_state_factor=get("core_model", "unfitted_state_factor"),
        )

    def list_units(self, synapses: np.ndarray | int, bits: int) -> int:
        """SynMem units of axon lists holding ``synapses`` synapses each (0 for an axon with none)."""
        s = np.asarray(synapses, dtype=np.int64)
        units = -((-(s * (bits + self.extra_bits) + self.header_bits)) // self.unit_bits)
        return int(np.sum(np.where(s > 0, units, 0)))

    def kernel_units(self, rows: int, channels: int) -> int:
        """SynMem units of a kernel's ``rows`` rows for ``channels`` output channels on one core."""
        return rows * (math.ceil(channels / self.kernel_weights_per_unit) + self.kernel_row_header)


@dataclass(frozen=True)
class SynapseLoad:
    """A synapse process as the core model sees it. ``matrix`` (neurons x axons, CSR) for a weight matrix, with
    ``zeros_stored`` for Lava's Dense, or ``local`` (axons, neurons, synapses) for an analytic one whose axons each
    reach neurons near their own index (an identity, a band: the lowering comparison's); ``rows`` / ``channels``
    for a shared kernel; ``bits`` the stored field of a synapse (weight, plus delay)."""

    name: str
    kind: str  # a Lava process class
    bits: int
    matrix: sparse.csr_matrix | None = None
    zeros_stored: bool = False
    rows: int = 0
    channels: int = 0
    local: tuple[int, int, int] | None = None

    @property
    def kernel(self) -> bool:
        return self.matrix is None and self.local is None

    @property
    def fitted(self) -> bool:
        return self.kind in FITTED_SYNAPSES

    def per_axon(self, lo: int, hi: int) -> np.ndarray:
        """The synapses each axon has on the neurons ``lo:hi``."""
        if self.local is not None:
            axons, neurons, synapses = self.local
            share = (hi - lo) / max(neurons, 1)
            return np.full(min(axons, math.ceil(axons * share)), max(1, round(synapses / max(axons, 1))))
        assert self.matrix is not None
        axons = self.matrix.shape[1]
        if self.zeros_stored:
            return np.full(axons, hi - lo, dtype=np.int64)
        part = self.matrix[lo:hi]
        return np.bincount(part.indices, minlength=axons).astype(np.int64)


@dataclass(frozen=True)
class Load:
    """What the fullest core of a cut holds."""

    neurons: int
    synmem: int
    axons: int

    def over(self, model: CoreModel, neurons_per_core: int) -> tuple[float, float, float]:
        """Each load over its budget (> 1: it does not fit)."""
        return self.neurons / neurons_per_core, self.synmem / model.synmem, self.axons / model.axons_in


@dataclass(frozen=True)
class GroupFit:
    """A neuron group cut into cores: ``block`` what one core holds ((W, H, C) of a map, or (neurons,)),
    ``load`` the fullest core's loads, ``bound_by`` the budget that set the cut, ``lower_bound`` the cores no cut
    goes under (unrounded). ``cores_high`` is the high end of the range where ``extrapolated`` says why."""

    cores: int
    block: tuple[int, ...]
    load: Load
    bound_by: str
    lower_bound: float
    bound_kind: str  # the budget that sets the lower bound
    fits: bool = True  # False: even one neuron with its synapses overflows a core
    extrapolated: tuple[str, ...] = ()
    cores_high: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "cores": self.cores,
            "block": list(self.block),
            "neurons_per_core": self.load.neurons,
            "synmem_per_core": self.load.synmem,
            "axons_per_core": self.load.axons,
            "bound_by": self.bound_by,
            "lower_bound": round(self.lower_bound, 3),
            "bound_kind": self.bound_kind,
            "fits": self.fits,
            "extrapolated": list(self.extrapolated),
            "cores_high": self.cores_high or self.cores,
        }


@dataclass
class Group:
    """A neuron group: its Lava class, the shape of its neurons and the synapses that feed it."""

    kind: str
    shape: tuple[int, ...]
    synapses: list[SynapseLoad] = field(default_factory=list)

    @property
    def neurons(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 0

    @property
    def map_shape(self) -> tuple[int, int, int] | None:
        """(W, H, C) where the group is a spatial map fed by kernels only (the compiler's block cut); else None."""
        if len(self.shape) != 3 or self.shape[0] * self.shape[1] <= 1:
            return None
        if any(not s.kernel for s in self.synapses):
            return None
        return int(self.shape[0]), int(self.shape[1]), int(self.shape[2])


def fit_group(group: Group, model: CoreModel) -> GroupFit:
    """The cores the compiler cuts ``group`` into (the module's docstring), the range where it is extrapolated."""
    reasons = _extrapolated(group)
    fit = _fit(group, model, model.neurons)
    high = fit.cores
    if reasons:
        factor = model.unfitted_state_factor
        per_core = model.neurons if group.kind in FITTED_NEURONS else max(1, int(model.neurons / factor))
        scale = 1 if all(s.fitted for s in group.synapses) else factor
        high = _fit(group, model, per_core, unit_scale=scale).cores
    return GroupFit(
        fit.cores,
        fit.block,
        fit.load,
        fit.bound_by,
        fit.lower_bound,
        fit.bound_kind,
        fit.fits,
        reasons,
        max(high, fit.cores),
    )


def _extrapolated(group: Group) -> tuple[str, ...]:
    out = []
    if group.kind not in FITTED_NEURONS:
        out.append(f"{group.kind} neurons: no public table compiles them; taken as a CUBA neuron's share of a core")
    for s in group.synapses:
        if not s.fitted:
            origin = "PilotNet's and YOLO-KP's convolutions" if s.kernel else "Dense (the same lists, zeros left out)"
            out.append(f"{s.kind} '{s.name}': its format is extrapolated from {origin}")
    return tuple(out)


def _fit(group: Group, model: CoreModel, per_core: int, unit_scale: float = 1) -> GroupFit:
    bound = lower_bound(group, model, per_core, unit_scale)
    grid = group.map_shape
    if grid is not None:
        block = _best_block(grid, group, model, per_core, unit_scale)
        if block is not None:
            cores, size, load = block
            return GroupFit(cores, size, load, _binding(load, model, per_core), *bound)
    return _split(group, model, per_core, unit_scale, bound)


def lower_bound(group: Group, model: CoreModel, per_core: int, unit_scale: float = 1) -> tuple[float, str]:
    """The cores no cut goes under, and the budget that sets it: the group's neurons, its synapses stored once
    (kernels whole, matrices on one core) and its input axons, each over a core's budget."""
    whole = _load(group, model, 0, group.neurons, None, unit_scale)
    over = whole.over(model, per_core)
    return max(over), BUDGETS[over.index(max(over))]


def _load(
    group: Group, model: CoreModel, lo: int, hi: int, channels: int | None, unit_scale: float, kernel_axons: int = 1
) -> Load:
    """The load of the neurons ``lo:hi`` (``channels``: the output channels a kernel's block holds; None: all)."""
    synmem = axons = 0
    for s in group.synapses:
        if s.kernel:
            synmem += model.kernel_units(s.rows, min(s.channels, channels or s.channels, hi - lo))
            axons += kernel_axons  # a kernel's inputs arrive as population messages: 1-2 AxonIn in the tables
        else:
            counts = s.per_axon(lo, hi)
            synmem += model.list_units(counts, s.bits)
            axons += int(np.count_nonzero(counts))
    return Load(hi - lo, math.ceil(synmem * unit_scale), axons)


def _binding(load: Load, model: CoreModel, per_core: int) -> str:
    over = load.over(model, per_core)
    return BUDGETS[over.index(max(over))]


def _halvings(n: int) -> list[int]:
    """n, ceil(n / 2), ceil(n / 4), ... down to 1."""
    out = [n]
    while out[-1] > 1:
        out.append(math.ceil(out[-1] / 2))
    return out


def _best_block(
    grid: tuple[int, int, int], group: Group, model: CoreModel, per_core: int, unit_scale: float
) -> tuple[int, tuple[int, int, int], Load] | None:
    """The compiler's block: all the channels whose kernels fit a core's synaptic memory (the largest halving of C:
    YOLO-KP keeps 64 of 512, PilotNet all), the narrower spatial axis whole where a line of it fits (else its
    largest halving that does), and the largest power of two along the wider axis (PilotNet's W) whose block
    fits, counted whole even past the map's edge."""
    x, y, c = grid
    wide, narrow = (0, 1) if x >= y else (1, 0)

    def fitting(wb: int, nb: int, cb: int) -> Load | None:
        if wb * nb * cb > per_core:
            return None
        load = _load(group, model, 0, wb * nb * cb, cb, unit_scale)
        return load if _fits(load, model, per_core) else None

    cb = next((cb for cb in _halvings(c) if fitting(1, 1, cb)), 0)
    nb = next((nb for nb in _halvings(grid[narrow]) if fitting(1, nb, cb)), 0) if cb else 0
    if not nb:
        return None
    wb = 1  # a power of two even past the map's edge: PilotNet's 20-wide map took two blocks of 16, not one of 20
    while wb < grid[wide] and fitting(2 * wb, nb, cb):
        wb *= 2
    load = fitting(wb, nb, cb)
    assert load is not None
    block = [0, 0, cb]
    block[wide], block[narrow] = wb, nb
    cores = math.ceil(grid[wide] / wb) * math.ceil(grid[narrow] / nb) * math.ceil(c / cb)
    return cores, (block[0], block[1], block[2]), load


def _fits(load: Load, model: CoreModel, per_core: int) -> bool:
    return max(load.over(model, per_core)) <= 1


def _split(group: Group, model: CoreModel, per_core: int, unit_scale: float, bound: tuple[float, str]) -> GroupFit:
    """The partitioner's split along the neurons: the largest piece's overflow ``r`` splits every piece into ``r``
    until the largest fits."""
    n = max(group.neurons, 1)
    pieces = 1
    for _ in range(MAX_SPLITS):
        size = math.ceil(n / pieces)
        load = _load(group, model, 0, size, None, unit_scale)
        over = load.over(model, per_core)
        if max(over) <= 1:
            return GroupFit(pieces, (size,), load, _binding(load, model, per_core), *bound)
        if size == 1:
            break
        pieces *= max(2, *(math.ceil(x) for x in over[:2]))  # axons do not shrink as neurons are split
        pieces = min(pieces, n)
    size = 1
    load = _load(group, model, 0, size, None, unit_scale)
    return GroupFit(n, (size,), load, _binding(load, model, per_core), *bound, fits=False)
