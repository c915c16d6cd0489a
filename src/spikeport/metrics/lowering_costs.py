"""Analytic cost of the ways to put LRF-Dyn's dendritic token mixing on Loihi 2 (docs/lowering.md).

One attention layer of N tokens, C channels, H heads, k dendrites: g = K * (k v) along the tokens (K_m =
C^T A^m Gamma, the first ``taps`` lags), y = q g, rescaled per head into the attention LIF.

    conv-kernel      the first chip-native build: identity Sparse -> coincidence LIF (k AND v) ->
                     depthwise token-mixing Conv (2 taps - 1 lags, the anti-causal half zero; the kernels of
                     the channels a core holds, stored once per core) -> ProdNeuron (q gate, q through an
                     identity DelaySparse) -> per-head rescale Sparse (graded) -> attention LIF.
    toeplitz-sparse  the same graph, the token mixing as a Sparse holding every synapse of the Toeplitz band:
                     C sum_n min(n + 1, taps) weights.
    token-serial     the recursion X_n = A X_{n-1} + Gamma u_n unrolled over the tokens: k graded dendrite
                     neurons per token and channel, fed by A (tridiagonal, 3k - 2 synapses) from token n - 1
                     and by Gamma (k) from the coincidence, read out by C^T (k) into the ProdNeuron.
                     Pipelined (one time step per algorithmic step): token n's input is delayed n steps, the
                     chain adds N steps of latency, and the outputs are re-aligned by delays N - 1 - n.
    conv-per-head    what runtime/lava/lowerings/ builds: conv-kernel with the heads on the Conv's channel axis,
                     H kernels instead of C copies of them, groups = H (Lava's Conv keeps groups in an int8 Var:
                     conv-kernel's groups = C > 127 breaks), the tokens on their 2-D grid (a kernel of
                     (2 rows - 1)(2 columns - 1) lags, the d_h channels of a head interleaved as pair slots).

Every number is an estimate from shapes, an assumed firing rate and a hardware profile: the state a neuron
keeps is its Lava class's record in runtime/lava/facts.py (what the built processes hold); cores per neuron
group by check-hw's core model fitted to Lava's Loihi 2 compiler (runtime/loihi2/core_model.py: the groups split
along their neurons, a weight matrix's lists per input axon and core, taken local as the identity, rescale and
band synapses are, a Conv's kernel rows once per core for the channels it holds; the attention LIF that reads
the mix is one of the groups, its neurons are not counted as the lowering's; delay bits only on the synapses
that delay). Energies
use the profile's per-op costs; for loihi2 these are Loihi 1 figures (Davies et al. 2018) carried over, since
no Loihi 2 per-op energy is published. The LRF term, the projections and spike routing are left out: they
are the same for all of them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from spikeport.counting import token_grid
from spikeport.errors import ProfileError
from spikeport.hw_profiles import HwProfile
from spikeport.ir.kernels.dendritic import MAX_TAPS
from spikeport.runtime.lava.facts import PROCESSES
from spikeport.runtime.lava.lowerings.token_mixing import slots
from spikeport.runtime.loihi2.core_model import CoreModel, Group as CoreGroup, SynapseLoad, fit_group, weight_field

SCHEMA = "spikeport.lowerings"
SCHEMA_VERSION = 1
LOWERING_NAMES = ("conv-kernel", "toeplitz-sparse", "token-serial", "conv-per-head")


class ModelShape(Protocol):
    """The fields of a train.models.ModelConfig this module reads (duck-typed: no torch here)."""

    @property
    def num_tokens(self) -> int: ...
    @property
    def embed_dim(self) -> int: ...
    @property
    def num_heads(self) -> int: ...
    @property
    def num_dendrites(self) -> int: ...
    @property
    def depth(self) -> int: ...
    @property
    def T(self) -> int: ...


@dataclass(frozen=True)
class LayerShape:
    name: str
    tokens: int  # N
    channels: int  # C
    heads: int  # H
    dendrites: int  # k
    depth: int  # attention layers in the network
    T: int  # time steps per sample

    @property
    def taps(self) -> int:
        return min(self.tokens, MAX_TAPS)

    @property
    def size(self) -> int:
        return self.tokens * self.channels


def layer_shape(name: str, cfg: ModelShape) -> LayerShape:
    """The attention-layer shape of a model config (a train.models.ModelConfig or anything with its fields)."""
    return LayerShape(name, cfg.num_tokens, cfg.embed_dim, cfg.num_heads, cfg.num_dendrites, cfg.depth, cfg.T)


@dataclass(frozen=True)
class Costs:
    """The profile numbers the estimate uses (SI: bytes, J)."""

    profile: str
    cores: CoreModel  # the core model's budgets and synapse formats
    weight_bits: int
    delay_bits: int
    synop: float  # J, binary spike through one synapse
    synop_graded: float  # J, graded spike through one synapse
    neuron_update: float  # J
    sources: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_profile(cls, prof: HwProfile) -> Costs:
        limits = ("neurons_per_core", "synmem_units_per_core", "fan_in_axons_per_core", "weight_bits", "delay_bits")
        energies = ("synop", "synop_graded", "neuron_update")
        sources = {key: prof.cite("limits", key) for key in limits}
        sources |= {key: prof.cite("energy", key) for key in energies}
        return cls(
            prof.name,
            CoreModel.of(prof),
            int(prof.si("limits", "weight_bits")),
            int(prof.si("limits", "delay_bits")),
            prof.si("energy", "synop"),
            prof.si("energy", "synop_graded"),
            prof.si("energy", "neuron_update"),
            sources,
        )

    @property
    def max_delay(self) -> int:
        return (1 << self.delay_bits) - 1


@dataclass
class Synapses:
    """One synapse process feeding a neuron group."""

    name: str
    weights: int  # stored weights (for a shared kernel: filled in per core by ``place``)
    inputs: int  # presynaptic neurons: input axons into the group's cores
    delayed: int = 0  # how many of the weights also hold a delay
    max_delay: int = 0  # steps
    kernel: int = 0  # a Conv: the weights of one kernel, stored once per core that holds a neuron using it
    kernels: int = 0  # distinct kernels, along the fastest (channel) axis of the raster order
    mixing: bool = False  # part of the token mixing proper (not an identity / rescale synapse all lowerings have)

    def bits(self, c: Costs) -> int:
        return self.weights * c.weight_bits + self.delayed * c.delay_bits


@dataclass
class Group:
    """A neuron group of Lava class ``process`` and the synapses it keeps in its cores (Loihi keeps a neuron's
    synapses in its core)."""

    name: str
    neurons: int
    process: str  # the Lava process class (runtime/lava/facts.py): the state each neuron keeps
    synapses: list[Synapses]
    own: bool = True  # False: the attention LIF, there in every lowering (its neurons are not counted)
    cores: int = 0
    cores_by: str = ""
    state_bits: int = field(init=False)  # per neuron: the state Vars of its class's record

    def __post_init__(self) -> None:
        self.state_bits = PROCESSES.get(self.process, self.name).state_bits_per_neuron


@dataclass
class LoweringCost:
    """One lowering of one attention layer; energies per sample and time step."""

    name: str
    neurons: int
    neuron_state_bytes: int
    stored_weights: int
    mixing_weights: int  # of which the token mixing's (kernel copies, Toeplitz band, Gamma + A + C^T)
    weight_bytes: int
    cores: int  # the groups below, the attention LIF included
    latency_steps: int  # from q, k, v to the attention LIF's input
    max_delay: int  # the longest synaptic delay, steps
    delays_fit: bool  # within the profile's delay bits
    synops: float  # binary spikes x synapses
    graded_synops: float  # graded spikes x synapses
    neuron_updates: float
    energy_J: float
    groups: list[Group]
    notes: list[str] = field(default_factory=list)

    def per_sample(self, shape: LayerShape) -> dict[str, float]:
        """The whole network's attention layers, one sample: cores and energy x depth (x T for energy)."""
        return {"cores": self.cores * shape.depth, "energy_J": self.energy_J * shape.depth * shape.T}


# ------------------------------------------------------------------------------------------ the counts
def reach(shape: LayerShape) -> int:
    """Synapses of one channel's causal token kernel: token n reads the min(n + 1, taps) tokens j <= n."""
    return sum(min(n + 1, shape.taps) for n in range(shape.tokens))


def active_tokens(shape: LayerShape, rate: float) -> float:
    """Expected tokens per channel whose kernel window holds a coincidence (g != 0 if no kernel mantissa is
    zero), coincidences independent at rate**2: sum_n 1 - (1 - rate**2) ** min(n + 1, taps)."""
    coincidence = rate * rate
    return sum(1 - (1 - coincidence) ** min(n + 1, shape.taps) for n in range(shape.tokens))


def place(group: Group, c: Costs) -> None:
    """The cores a group needs under the core model (its split along the neurons), and the budget that sets them;
    a Conv's stored weights become its kernel rows copied to every core that holds its channels."""
    loads = [_load(s, group.neurons, c) for s in group.synapses]
    fit = fit_group(CoreGroup(group.process, (group.neurons,), loads), c.cores)
    if not fit.fits:
        raise ProfileError(f"{group.name}: one neuron with its synapses does not fit a core ({fit.bound_by})")
    group.cores, group.cores_by = fit.cores, fit.bound_by
    for s in group.synapses:  # one copy per core of the kernels of the channels it holds
        if s.kernel:
            s.weights = fit.cores * min(s.kernels, math.ceil(group.neurons / fit.cores)) * s.kernel


def _load(s: Synapses, neurons: int, c: Costs) -> SynapseLoad:
    """A synapse process as the core model stores it: a Conv's kernel rows, or a weight matrix whose synapses
    are local (an input axon reaches the neurons of its own token and channel: identity, rescale, band)."""
    bits = weight_field(c.weight_bits) + (c.delay_bits if s.delayed else 0)
    if s.kernel:
        return SynapseLoad(s.name, "Conv", bits, rows=s.kernel, channels=s.kernels)
    return SynapseLoad(s.name, "Sparse", bits, local=(s.inputs, neurons, s.weights))


def _attention_lif(shape: LayerShape, delayed: int = 0, max_delay: int = 0) -> Group:
    """The attention LIF every lowering feeds, with the per-head rescale synapses (2 out_mant[h], graded)."""
    rescale = Synapses("rescale (graded)", shape.size, shape.size, delayed, max_delay)
    return Group("attention LIF", shape.size, "LIFReset", [rescale], own=False)


def _coincidence(shape: LayerShape) -> Group:
    """k AND v: a memoryless LIF (vth 1) behind two identity Sparse."""
    n = shape.size
    return Group("coincidence LIF", n, "LIF", [Synapses("k identity", n, n), Synapses("v identity", n, n)])


def _cost(
    name: str,
    shape: LayerShape,
    c: Costs,
    groups: list[Group],
    latency: int,
    synops: float,
    graded: float,
    notes: list[str],
) -> LoweringCost:
    for g in groups:
        place(g, c)
    synapses = [s for g in groups for s in g.synapses]
    neurons = sum(g.neurons for g in groups if g.own)
    max_delay = max(s.max_delay for s in synapses)
    updates = float(neurons)  # every neuron of the lowering, once per algorithmic step (= time step: pipelined)
    return LoweringCost(
        name=name,
        neurons=neurons,
        neuron_state_bytes=sum(g.neurons * g.state_bits for g in groups if g.own) // 8,
        stored_weights=sum(s.weights for s in synapses),
        mixing_weights=sum(s.weights for s in synapses if s.mixing),
        weight_bytes=math.ceil(sum(s.bits(c) for s in synapses) / 8),
        cores=sum(g.cores for g in groups),
        latency_steps=latency,
        max_delay=max_delay,
        delays_fit=max_delay <= c.max_delay,
        synops=synops,
        graded_synops=graded,
        neuron_updates=updates,
        energy_J=synops * c.synop + graded * c.synop_graded + updates * c.neuron_update,
        groups=groups,
        notes=notes,
    )


def conv_kernel(shape: LayerShape, c: Costs, rate: float, per_head: bool = False) -> LoweringCost:
    """The chip-native lowering: coincidence LIF -> token-mixing Conv -> ProdNeuron -> rescale (3 steps).
    ``per_head``: the Conv's channels are the heads (one kernel per head, groups = H), d_h on its second
    spatial axis: the coincidence and product neurons laid out (token, d_h, head), which the identity
    synapses into them and the rescale out of them permute for free (what runtime/lava/lowerings/ builds)."""
    n, kernel, kernels = shape.size, 2 * shape.taps - 1, shape.channels
    if per_head:  # the built layout (lowerings/token_mixing.py): the token grid, d_h as pair slots, heads on Z
        grid = token_grid((shape.tokens,))
        assert grid is not None, f"{shape.tokens} tokens fit no token grid"
        kernel = (2 * grid[0] - 1) * (2 * grid[1] - 1)
        kernels = shape.heads * slots(grid, shape.channels // shape.heads, shape.heads)[2]
    # a Conv's input arrives on population axons: PilotNet's compile table shows 1-2 input axons per conv core
    # against 2560 for a Dense layer (docs/loihi2_sources.md section 1, inferred), so it takes no per-neuron axon
    mix = Synapses("token-mixing Conv", 0, 0, kernel=kernel, kernels=kernels, mixing=True)
    q = Synapses("q identity (DelaySparse, 1 step)", n, n, delayed=n, max_delay=1)
    groups = [_coincidence(shape), Group("ProdNeuron", n, "ProdNeuron", [mix, q]), _attention_lif(shape)]
    synops = 3 * rate * n + rate * rate * shape.channels * reach(shape)
    graded = rate * shape.channels * active_tokens(shape, rate)  # the product's messages, one synapse each
    notes = [
        "binary synops count the nonzero reach of each coincidence (min(taps, N - j) tokens); if the chip also "
        "walks the kernel's zero anti-causal half, the token-mixing synops up to double",
        "the Conv's input is taken to use population axons (none per neuron; inferred from PilotNet's compile "
        "table); check_hw counts one axon per presynaptic neuron and so gives more cores",
    ]
    if per_head:
        return _cost(
            "conv-per-head", shape, c, groups, 3, synops, graded, ["built by runtime/lava/lowerings/dendritic.py"]
        )
    if shape.channels > 127:
        notes.append(
            f"groups = C = {shape.channels} does not fit the int8 Var in which Lava's Conv model keeps it: "
            "Lava 0.10's CPU Conv fails to build (OverflowError); conv-per-head needs groups = H"
        )
    return _cost("conv-kernel", shape, c, groups, 3, synops, graded, notes)


def conv_per_head(shape: LayerShape, c: Costs, rate: float) -> LoweringCost:
    """conv-kernel with one kernel per head on the Conv's channel axis (``conv_kernel(per_head=True)``)."""
    return conv_kernel(shape, c, rate, per_head=True)


def toeplitz_sparse(shape: LayerShape, c: Costs, rate: float) -> LoweringCost:
    """The same graph, the token mixing as a Sparse with one stored weight per (token, lag, channel)."""
    n = shape.size
    mix = Synapses("token-mixing Sparse", shape.channels * reach(shape), n, mixing=True)
    q = Synapses("q identity (DelaySparse, 1 step)", n, n, delayed=n, max_delay=1)
    groups = [_coincidence(shape), Group("ProdNeuron", n, "ProdNeuron", [mix, q]), _attention_lif(shape)]
    synops = 3 * rate * n + rate * rate * shape.channels * reach(shape)
    graded = rate * shape.channels * active_tokens(shape, rate)
    return _cost("toeplitz-sparse", shape, c, groups, 3, synops, graded, [])


def token_serial(shape: LayerShape, c: Costs, rate: float) -> LoweringCost:
    """The recursion unrolled over the tokens: k dendrite neurons per token and channel, N + 3 steps."""
    N, C, k, n = shape.tokens, shape.channels, shape.dendrites, shape.size
    band = 3 * k - 2  # nonzeros of the tridiagonal A
    gamma = Synapses("Gamma (delay n)", k * n, n, delayed=k * (N - 1) * C, max_delay=N - 1, mixing=True)
    transition = Synapses("A (tridiagonal, token n-1 -> n)", band * (N - 1) * C, k * (N - 1) * C, mixing=True)
    readout = Synapses("C^T (readout)", k * n, k * n, mixing=True)
    q = Synapses("q identity (delay n + 2)", n, n, delayed=n, max_delay=N + 1)
    groups = [
        _coincidence(shape),
        Group("dendrite neurons (graded)", k * n, "GradedVec", [gamma, transition]),
        Group("ProdNeuron", n, "ProdNeuron", [readout, q]),
        _attention_lif(shape, delayed=(N - 1) * C, max_delay=N - 1),
    ]
    active = active_tokens(shape, rate)  # tokens whose dendrites hold a nonzero state (the kernel's horizon)
    last = 1 - (1 - rate * rate) ** shape.taps  # the last token sends no A messages
    synops = 3 * rate * n + rate * rate * k * n
    graded = C * (active * (band + k) - last * band) + rate * C * active
    notes = [
        f"delays up to N + 1 = {N + 1} steps (Gamma n, q n + 2, rescale N - 1 - n); beyond "
        f"{c.max_delay} a chain of relay neurons is needed (not counted)",
        "8-bit A rounds once per token hop: the kernel it realises is not the 8-bit K_m of the other two",
    ]
    return _cost("token-serial", shape, c, groups, N + 3, synops, graded, notes)


BUILDERS = {
    "conv-kernel": conv_kernel,
    "toeplitz-sparse": toeplitz_sparse,
    "token-serial": token_serial,
    "conv-per-head": conv_per_head,
}


def compare(shape: LayerShape, prof: HwProfile, rate: float = 0.1) -> dict[str, LoweringCost]:
    """Every lowering of one layer of ``shape``, q/k/v firing at ``rate`` (coincidences at rate**2)."""
    if not 0 <= rate <= 1:
        raise ValueError(f"rate {rate} is not a probability")
    costs = Costs.from_profile(prof)
    return {name: build(shape, costs, rate) for name, build in BUILDERS.items()}


RATIO_FIELDS = ("neurons", "stored_weights", "mixing_weights", "weight_bytes", "cores", "latency_steps", "energy_J")


def to_dict(shape: LayerShape, prof: HwProfile, rate: float, result: dict[str, LoweringCost]) -> dict[str, Any]:
    """One preset's comparison as JSON (ratios against conv-kernel, the implemented lowering)."""
    base = result["conv-kernel"]
    return {
        "shape": asdict(shape) | {"taps": shape.taps},
        "rate": rate,
        "coincidence_rate": rate * rate,
        "lowerings": {name: asdict(cost) | {"per_sample": cost.per_sample(shape)} for name, cost in result.items()},
        "ratios_to_conv_kernel": {
            name: {f: getattr(cost, f) / getattr(base, f) for f in RATIO_FIELDS} for name, cost in result.items()
        },
    }


def report(shapes: list[LayerShape], prof: HwProfile, rate: float) -> dict[str, Any]:
    costs = Costs.from_profile(prof)
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "kind": "estimated",
        "profile": prof.name,
        "label": f"estimate: analytic counts x profile {prof.name} (per-op energies: Loihi 1 figures carried over)",
        "sources": costs.sources,
        "presets": [to_dict(s, prof, rate, compare(s, prof, rate)) for s in shapes],
    }
