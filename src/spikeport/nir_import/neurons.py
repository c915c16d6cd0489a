"""NIR's continuous-time neurons -> Loihi 2's LIF: decays, thresholds and what each synapse's sum is scaled by.

NIR defines each neuron by an ODE; spikeport integrates it with Euler steps of ``dt`` (seconds per time step), in
Loihi's order (the current first, then the membrane, then the spike, hard reset in the same step), as Norse's
``LIFBoxCell`` and snnTorch's ``Leaky`` / ``Synaptic`` (with ``reset_mechanism="zero"``) do:

    LIF      tau dv/dt = (v_leak - v) + R I         v <- v (1 - k) + k v_leak + k R I,         k = dt / tau
    CubaLIF  tau_syn dI/dt = -I + w_in x            I <- I (1 - ks) + ks w_in x,               ks = dt / tau_syn
             tau_mem dv/dt = (v_leak - v) + R I     v <- v (1 - km) + km v_leak + km R I        (the new I)
    IF       dv/dt = R I                            v <- v + R I    (per step, as Norse, Sinabs and snnTorch run it)
    Threshold z = H(x - threshold)                  v <- x          (no memory)

    spike z = v > v_threshold, then v <- v_reset (which must be 0: Loihi's LIF resets to 0)

On Loihi 2, ``u <- u (4096 - (du + 1)) >> 12 + a_in`` and ``v <- v (4096 - dv) >> 12 + u + bias``, so
``dv = round(4096 k)`` and ``du + 1 = round(4096 ks)`` (12-bit decays: the rounding is the one approximation of the
dynamics, reported per layer), ``a_in`` is the synaptic sum times ``gain`` (k R; km R ks w_in for CubaLIF), and a
threshold that differs per neuron is folded into that neuron's gain and bias (v / theta fires at 1). What varies
per neuron must be constant over a map's positions (a Loihi LIF group holds one decay, one threshold and a bias
per channel).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spikeport import fixedpoint as fx
from spikeport.errors import ConversionError
from spikeport.ir.registry import Registry

NO_LEAK_TAU = float(fx.DECAY_UNITY)  # the ``tau`` attribute of a layer that never leaks (as netx imports write it)


@dataclass
class Dynamics:
    """One neuron layer: its float step (exact) and what the mapping does to its synapses.

    ``leak`` k (v keeps 1 - k each step), ``syn_leak`` ks (None: the current forgets at once, u = a_in), ``gain``
    [C]: what each channel's synaptic sum is multiplied by to give a_in, ``bias_gain`` [C]: what a synapse bias is
    multiplied by to give the membrane bias (it enters as a constant), ``bias`` [C]: the membrane bias from the
    neuron's own parameters (k v_leak), ``threshold``: the v that fires (strictly above)."""

    primitive: str
    leak: float
    syn_leak: float | None
    gain: np.ndarray
    bias_gain: np.ndarray
    bias: np.ndarray
    threshold: float
    notes: list[str] = field(default_factory=list)

    @property
    def dv(self) -> int:
        return int(round(fx.DECAY_UNITY * self.leak))

    @property
    def du(self) -> int:
        """Lava's du: the current keeps (4096 - (du + 1)) / 4096 each step (4095: it forgets at once)."""
        return fx.DECAY_UNITY - 1 if self.syn_leak is None else int(round(fx.DECAY_UNITY * self.syn_leak)) - 1

    @property
    def tau_steps(self) -> float:
        """The ``tau`` attribute (time steps; it records the float dynamics, the integers are ``dv``)."""
        return 1.0 / self.leak if self.leak > 0 else NO_LEAK_TAU

    def decays(self) -> list[dict[str, Any]]:
        """Each decay the layer holds: the exact factor kept per step, the 12-bit one Loihi holds, the error."""
        rows = [("v", self.leak, self.dv)]
        if self.syn_leak is not None:
            rows.append(("u", self.syn_leak, self.du + 1))
        out = []
        for var, k, held in rows:
            out.append(
                {
                    "state": var,
                    "kept_exact": 1.0 - k,
                    "kept_held": 1.0 - held / fx.DECAY_UNITY,
                    "error": held / fx.DECAY_UNITY - k,
                    "tau_steps_exact": 1.0 / k if k > 0 else None,
                    "tau_steps_held": fx.DECAY_UNITY / held if held > 0 else None,
                    "exact": bool(held == fx.DECAY_UNITY * k),
                }
            )
        return out


@dataclass(frozen=True)
class Where:
    """The NIR node a parameter belongs to, for the one line that refuses it."""

    node: str
    primitive: str
    channels: int  # C: the neuron layer's channels (a map's first axis, a vector's length)
    dt: float

    def fail(self, problem: str) -> ConversionError:
        return ConversionError(f"NIR node '{self.node}' ({self.primitive}): {problem}")


def per_channel(where: Where, name: str, value: Any) -> np.ndarray:
    """A neuron parameter as one float per channel [C]: a scalar broadcasts; a map's (C, H, W) values must be the
    same at every position of a channel."""
    arr = np.asarray(value, np.float64)
    if not np.isfinite(arr).all():
        raise where.fail(f"'{name}' holds non-finite values")
    if arr.size == 1:
        return np.full(where.channels, float(arr.ravel()[0]))
    if arr.ndim == 0 or arr.shape[0] != where.channels:
        raise where.fail(f"'{name}' has shape {arr.shape}, expected one value or one per channel ({where.channels})")
    flat = arr.reshape(where.channels, -1)
    if np.any(flat != flat[:, :1]):
        raise where.fail(f"'{name}' differs between positions of a channel; a Loihi LIF group holds one per channel")
    return flat[:, 0].copy()


def uniform(where: Where, name: str, value: Any) -> float:
    """A parameter the layer must share (a time constant: one decay per LIF group)."""
    arr = per_channel(where, name, value)
    if np.any(arr != arr[0]):
        raise where.fail(
            f"'{name}' varies across neurons ({arr.min():g} .. {arr.max():g}); a spikeport LIF layer holds one "
            "decay: export one value per layer"
        )
    return float(arr[0])


def step_fraction(where: Where, name: str, tau: float) -> float:
    """dt / tau, which must be in (0, 1]: an Euler step longer than the time constant does not integrate it."""
    if not tau > 0:
        raise where.fail(f"'{name}' = {tau:g} s, expected a positive time constant")
    k = where.dt / tau
    if k > 1 + 1e-9:
        raise where.fail(
            f"'{name}' = {tau:g} s is shorter than the time step dt = {where.dt:g} s (expected tau >= dt; "
            "--dt sets the step the graph was trained with)"
        )
    return min(k, 1.0)


def no_reset_offset(where: Where, node: Any) -> None:
    reset = getattr(node, "v_reset", None)
    if reset is not None and np.any(np.asarray(reset) != 0):
        raise where.fail("v_reset is not 0; Loihi 2's LIF resets to 0 (supported: v_reset = 0)")


def thresholds(where: Where, node: Any, field_name: str = "v_threshold") -> tuple[float, np.ndarray]:
    """(the layer's threshold, the per-channel divisor folded into gains and biases): one threshold when all agree,
    else 1 with each channel's threshold folded in."""
    theta = per_channel(where, field_name, getattr(node, field_name))
    if np.any(theta <= 0):
        raise where.fail(f"'{field_name}' <= 0; spikeport's LIF fires above a positive threshold")
    if np.all(theta == theta[0]):
        return float(theta[0]), np.ones(where.channels)
    return 1.0, theta


NeuronMap = Callable[[Where, Any], Dynamics]
NEURONS: Registry[NeuronMap] = Registry("NIR neuron mapping")


@NEURONS.register("LIF")
def _lif(where: Where, node: Any) -> Dynamics:
    no_reset_offset(where, node)
    k = step_fraction(where, "tau", uniform(where, "tau", node.tau))
    theta, fold = thresholds(where, node)
    r, v_leak = per_channel(where, "r", node.r), per_channel(where, "v_leak", node.v_leak)
    return Dynamics("LIF", k, None, k * r / fold, k * r / fold, k * v_leak / fold, theta)


@NEURONS.register("CubaLIF")
def _cuba_lif(where: Where, node: Any) -> Dynamics:
    no_reset_offset(where, node)
    km = step_fraction(where, "tau_mem", uniform(where, "tau_mem", node.tau_mem))
    ks = step_fraction(where, "tau_syn", uniform(where, "tau_syn", node.tau_syn))
    theta, fold = thresholds(where, node)
    r, v_leak = per_channel(where, "r", node.r), per_channel(where, "v_leak", node.v_leak)
    w_in = per_channel(where, "w_in", node.w_in)
    notes = ["a synapse bias enters v at its steady-state current at once (its rise through I is not held)"]
    # u = km R I: the current in v's units; a constant input b settles at I = w_in b, so u = km R w_in b
    return Dynamics(
        "CubaLIF", km, ks, km * r * ks * w_in / fold, km * r * w_in / fold, km * v_leak / fold, theta, notes
    )


@NEURONS.register("IF")
def _if(where: Where, node: Any) -> Dynamics:
    no_reset_offset(where, node)
    theta, fold = thresholds(where, node)
    r = per_channel(where, "r", node.r)
    zero = np.zeros(where.channels)
    note = "NIR's dv/dt = R I taken as v += R I per step (Norse, Sinabs and snnTorch integrate IF so)"
    return Dynamics("IF", 0.0, None, r / fold, r / fold, zero, theta, [note])


@NEURONS.register("Threshold")
def _threshold(where: Where, node: Any) -> Dynamics:
    theta, fold = thresholds(where, node, "threshold")
    ones, zero = np.ones(where.channels), np.zeros(where.channels)
    return Dynamics("Threshold", 1.0, None, ones / fold, ones / fold, zero, theta, ["H(x - threshold): no memory"])


@dataclass(frozen=True)
class Integration:
    """An output integrator (LI, I) as the host readout sums it: ``scale`` [C] multiplies the synaptic sum,
    ``bias`` [C] is added each step; ``note``: what the readout does not hold."""

    scale: np.ndarray
    bias: np.ndarray
    note: str


INTEGRATORS: Registry[Callable[[Where, Any], Integration]] = Registry("NIR output integrator")


@INTEGRATORS.register("LI")
def _li(where: Where, node: Any) -> Integration:
    k = step_fraction(where, "tau", uniform(where, "tau", node.tau))
    r, v_leak = per_channel(where, "r", node.r), per_channel(where, "v_leak", node.v_leak)
    note = "the readout sums k R I over the steps: the leak of LI's v is dropped (its argmax is that of the sum)"
    return Integration(k * r, k * v_leak, note)


@INTEGRATORS.register("I")
def _integrator(where: Where, node: Any) -> Integration:
    r = per_channel(where, "r", node.r)
    return Integration(r, np.zeros(where.channels), "exact: the readout sums R I over the steps")
