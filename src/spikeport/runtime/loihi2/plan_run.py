"""Running the hardware plan (``plan.py``): on Loihi 2 where lava-loihi is installed, else on ``Loihi2SimCfg`` with
simulated embedded IO; the outputs every step and the read states compared with what the reference computes.

Samples stream one every R steps, as in every Lava run here (``runtime/lava/backend.py``). The run pauses only
where the plan talks to the chip between steps: to set the next sample's bias (bias drive) and to read a layer's
``u`` / ``v`` once it has finished a sample (``Var.get()``). The output sinks are read once at the end. Energy and
time per step come from Lava's Loihi 2 profiler callbacks when they are importable (lava-loihi).

The plan reads only its outputs, so a run report's per-layer counts are the reference's on the same samples
(``HardwareRun.counts_from`` says so); the outputs and states are the run's own.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from spikeport.chip_limits import BIAS_MANT_BITS, HALA_POINT_CORES, MAX_IO_LATENCY
from spikeport.errors import ConfigError, DataError
from spikeport.ir.graph import Graph
from spikeport.ir.kernels import kernel
from spikeport.run_report import HardwareRun, RunReport
from spikeport.runtime.executor import GraphExecutor
from spikeport.runtime.lava import compat
from spikeport.runtime.lava.backend import depths, reset_interval
from spikeport.runtime.lava.partition import boundary_values
from spikeport.runtime.lava.run import align, pixel_stream, sim_config
from spikeport.runtime.lava.session import LavaSession
from spikeport.runtime.loihi2.compile_table import CompileTable
from spikeport.runtime.loihi2.drive import ChipDrive
from spikeport.runtime.loihi2.plan import (
    BIAS_MANT_SIM,
    PlanNetwork,
    build_plan_network,
    default_drive,
    drive_bias,
)
from spikeport.runtime.replay import HostStep
from spikeport.runtime.sim.reference import ReferenceSimulator
from spikeport.value_kinds import LOGITS

SIM_CONFIG = "Loihi2SimCfg(select_tag='fixed_pt')"
HW_CONFIG = "Loihi2HwCfg"


@dataclass
class Expected:
    """What the reference computes for a plan's outputs ([S, T, n] each) and read states ({"u", "v"}: [S, n]) on the
    same samples, and its run report (the counts)."""

    outputs: dict[str, np.ndarray]
    states: dict[str, dict[str, np.ndarray]]
    report: RunReport

    def save(self, path: str) -> None:
        """One .npz: outputs as ``out/<name>``, states as ``state/<layer>/<var>`` (the run report is saved beside)."""
        arrays = {f"out/{k}": v for k, v in self.outputs.items()}
        arrays |= {f"state/{layer}/{var}": v for layer, d in self.states.items() for var, v in d.items()}
        np.savez_compressed(path, **arrays)  # type: ignore[arg-type]  # numpy 2 stubs type a keyword there

    @classmethod
    def load(cls, path: str, report: RunReport) -> Expected:
        outputs: dict[str, np.ndarray] = {}
        states: dict[str, dict[str, np.ndarray]] = {}
        with np.load(path, allow_pickle=False) as data:
            for key in data.files:
                kind, _, rest = key.partition("/")
                if kind == "out":
                    outputs[rest] = data[key]
                elif kind == "state":
                    layer, _, var = rest.rpartition("/")
                    states.setdefault(layer, {})[var] = data[key]
                else:
                    raise DataError(f"{path}: unexpected array '{key}' (expected out/<name> or state/<layer>/<var>)")
        return cls(outputs, states, report)


def expect(
    graph: Graph, images: np.ndarray, labels: np.ndarray | None, outputs: Sequence[str], states: Sequence[str]
) -> Expected:
    """The reference's values of the plan's ``outputs`` and ``states`` for ``images``."""
    ref = ReferenceSimulator(graph).run(images, labels, record=True)
    assert ref.recording is not None
    values: dict[str, np.ndarray] = {}
    for name in outputs:
        if name.endswith(".token_sum"):  # the readout's input summed over its tokens
            x = graph.nodes[graph.nodes[name.removesuffix(".token_sum")].inputs[0]]
            sums = boundary_values(graph, x.name, ref.recording, len(images))
            values[name] = sums.reshape(len(images), graph.T, -1, x.shape[-1]).sum(2)
        elif name.endswith(".sum"):  # a sum the plan relays out (a network without a readout)
            sums = boundary_values(graph, name.removesuffix(".sum"), ref.recording, len(images))
            values[name] = sums.reshape(len(images), graph.T, -1)
        else:
            values[name] = np.asarray(ref.recording[name]).reshape(len(images), graph.T, -1)
    held: dict[str, dict[str, np.ndarray]] = {}
    if states:
        executor = GraphExecutor(graph)
        executor.run(images)
        for layer in states:
            held[layer] = {var: np.asarray(executor.state[layer][var]).reshape(len(images), -1) for var in ("u", "v")}
    ref.recording = None
    return Expected(values, held, ref)


def run_plan(
    graph: Graph,
    images: np.ndarray,
    labels: np.ndarray | None = None,
    *,
    drive: ChipDrive | str | None = None,
    states: Sequence[str] = (),
    hardware: bool = False,
    expected: Expected | None = None,
    io_latency: int | None = None,
    run_cfg: Any = None,
    progress: Callable[[str], None] | None = None,
) -> RunReport:
    """The run report of ``images`` on the hardware plan. ``hardware``: Loihi2HwCfg and lava-loihi's adapters (the
    host chosen beforehand, e.g. by ``lava.utils.loihi.use_slurm_host``); else Loihi2SimCfg and the stand-ins.
    ``expected``: the reference's values (``expect``; computed here when None). ``io_latency``: the steps the
    adapters add (None: 0 for the stand-ins, found by alignment on the chip, up to MAX_IO_LATENCY)."""
    compat.import_lava()
    say = progress or (lambda line: None)
    drive, why, note = choose_drive(graph, images, drive)
    S, T = len(images), graph.T
    start = time.perf_counter()
    probe = PlanProbe(hardware)
    bias, bias_bits = (None, None)
    if drive is ChipDrive.BIAS:
        bias, exp = drive_bias(graph, images)
        bias_bits = int(np.abs(bias).max(initial=0)).bit_length() + 1
        if not (BIAS_MANT_SIM[0] <= bias.min() and bias.max() <= BIAS_MANT_SIM[1]):
            raise ConfigError(
                f"input drive 'bias': the first layer needs bias_mant up to {int(np.abs(bias).max()):,} ({bias_bits} "
                f"bits) for these samples, beyond what Lava's LIF holds (int16) and Loihi 2's {BIAS_MANT_BITS} bits; "
                "use the adapter drive"
            )
    R = reset_interval(T)
    total = S * R + max(depths(graph).values()) + 2  # the token sum sits one step below the deepest node at most
    source = pixel_stream(graph, images, R, total - S * R) if drive is ChipDrive.ADAPTER else None
    built = build_plan_network(graph, drive, states, source_data=source, hardware=hardware, sink_steps=total)
    net = built.net
    pauses = _pauses(built, S, T, total, bias)
    if bias is not None:
        built.bias.bias_mant.init = bias[0].astype(np.int16)
    cfg = run_cfg or (probe.config(total) if hardware else sim_config())
    read: dict[str, dict[str, list[np.ndarray]]] = {
        layer: {var: [] for var in built.state_vars(layer)} for layer in states
    }
    say(f"hardware plan: {len(net.processes)} processes, {total} steps, drive {drive.value}")
    compiler_log = CompilerLog() if hardware else None
    with compiler_log or contextlib.nullcontext(), LavaSession(net.processes[0], cfg) as session:
        done = 0
        for at in sorted(pauses):
            session.run(at - done)
            done = at
            for action in pauses[at]:
                action(read)
        if done < total:
            session.run(total - done)
        outputs = {name: _sink_values(sink) for name, sink in built.sinks.items()}
    got = {
        name: align(outputs[name].T, S, T, R, built.sink_depth[name], (int(np.prod(built.sink_shape[name])),))
        for name in outputs
    }
    held = {layer: {var: np.stack(v) for var, v in d.items()} for layer, d in read.items()}
    expected = expected or expect(graph, images, labels, list(built.sinks), states)
    latency = _latency(outputs, built, expected, S, T, R) if io_latency is None and hardware else (io_latency or 0)
    if latency:
        got = {n: align(outputs[n].T, S, T, R, built.sink_depth[n] + latency, got[n].shape[2:]) for n in outputs}
    mismatch = _first_mismatch(got, held, expected)
    logits = host_readout(graph, got)
    preds = expected.report.predictions if logits is None else [int(p) for p in np.argmax(logits, -1)]
    run = HardwareRun(
        run_config=HW_CONFIG if hardware else SIM_CONFIG,
        embedded_io="lava.proc.embedded_io" if hardware else "simulated embedded IO",
        drive=drive.value,
        plan=built.plan.to_dict(),
        counts_from="reference (the plan reads only its outputs; the outputs are this run's, compared every step)",
        outputs_identical=all(np.array_equal(got[n], expected.outputs[n]) for n in got),
        states_identical=None if not states else all(
            np.array_equal(held[la][v], expected.states[la][v]) for la in held for v in held[la]
        ),
        first_mismatch=mismatch,
        io_latency=latency,
        bias_bits=bias_bits,
        samples=S,
        compile_table=None if compiler_log is None else compiler_log.table(),
        chip_profile=probe.chip_profile() if hardware else None,
        extra={"drive_reason": why} | ({"drive_note": note} if note else {}),
    )  # fmt: skip
    accuracy = None if labels is None or preds is None else float(np.mean(np.asarray(preds) == np.asarray(labels)))
    return replace(
        expected.report,
        executor="loihi2" if hardware else "loihi2-sim",
        predictions=preds,
        accuracy=accuracy,
        wall_time_s=time.perf_counter() - start,
        latency_timesteps=built.plan.latency + latency,
        hardware=run,
        energy_measured=probe.results(S, total) if hardware else None,
    )


MEMORY_FIELDS = ("core_idx", "total_mpds")  # lava-dl pilotnet_snn/benchmark.ipynb plots these
ACTIVITY_FIELDS = ("core_idx", "syn_ops", "dendrite_updates", "axon_out", "spikes_in")


class CompilerLog:
    """What Lava's Loihi 2 compiler prints while the plan compiles (its partitioner's messages and per-core table),
    kept as it goes to the terminal (a tee on stdout), then read into a compile table (``compile_table.py``)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._stdout: Any = None

    def __enter__(self) -> CompilerLog:
        self._stdout = sys.stdout
        sys.stdout = self  # a file-like tee
        return self

    def __exit__(self, *exc: object) -> None:
        sys.stdout = self._stdout

    def write(self, text: str) -> int:
        if len(self.lines) < MAX_LOG_LINES:
            self.lines.extend(text.splitlines())
        return int(self._stdout.write(text))

    def flush(self) -> None:
        self._stdout.flush()

    def table(self) -> dict[str, Any]:
        """The compile table as result.json keeps it: the compiler's lines and their cores, or why there is none."""
        try:
            table = CompileTable.parse(self.lines, "the compiler's output")
        except DataError as err:
            return {"available": False, "reason": str(err)}
        kept = [line for line in self.lines if line.startswith(("Violation", "Final", "|", "-", "Per core"))]
        return {"available": True, "cores": table.total, "percent": table.percent, "text": kept[:MAX_LOG_LINES]}


MAX_LOG_LINES = 4096


def choose_drive(graph: Graph, images: np.ndarray, drive: ChipDrive | str | None) -> tuple[ChipDrive, str, str]:
    """(the input drive, why, a note to say once or ""). None: the bias drive only where the network takes it and
    these samples' biases fit Loihi 2's 13-bit bias_mant, else the adapter drive (what `bundle` does): Lava's CPU LIF
    holds int16, so a simulation with 16-bit biases said "identical" for what the chip cannot hold. A bias drive
    chosen beyond 13 bits runs (the simulation holds it) with the note that the chip would not."""
    bits = None
    if drive is None or ChipDrive(drive) is ChipDrive.BIAS:
        if default_drive(graph) is ChipDrive.BIAS:
            bits = int(np.abs(drive_bias(graph, images)[0]).max(initial=0)).bit_length() + 1
    over = bits is not None and bits > BIAS_MANT_BITS
    need = (
        f"these samples' biases need {bits} signed bits; Loihi 2's LIF holds {BIAS_MANT_BITS} (lava/proc/lif/models.py)"
    )
    if drive is not None:
        chosen = ChipDrive(drive)
        note = f"input drive 'bias' as chosen: {need}, so the chip could not run it as simulated here" if over else ""
        return chosen, "chosen", note if chosen is ChipDrive.BIAS else ""
    if default_drive(graph) is ChipDrive.ADAPTER:
        return ChipDrive.ADAPTER, "the network has no stem whose input can be a bias", ""
    if over:
        why = f"{need}: the pixels stream through PyToN3ConvAdapter instead"
        return ChipDrive.ADAPTER, why, f"input drive adapter: {why}"
    return ChipDrive.BIAS, f"the samples' biases fit {BIAS_MANT_BITS} bits (Intel's PilotNet-LIF pattern)", ""


Action = Callable[[dict[str, dict[str, list[np.ndarray]]]], None]


def _pauses(built: PlanNetwork, S: int, T: int, total: int, bias: np.ndarray | None) -> dict[int, list[Action]]:
    """Step counts at which the run stops for the host: the next sample's bias (set before the first layer's next
    window starts), and each read layer's state once it has run the sample's T steps."""
    R, depth = built.net.R, built.net.depth
    pauses: dict[int, list[Action]] = {}
    if bias is not None:
        first = depth[built.bias.name]
        for s in range(1, S + 1):
            value = bias[s] if s < S else np.zeros_like(bias[0])  # after the last sample: no input
            pauses.setdefault(s * R + first, []).append(_set_bias(built.bias, value))
    for layer, proc in built.state_procs.items():
        for s in range(S):
            pauses.setdefault(s * R + depth[layer] + T, []).append(_read_state(layer, proc, built.state_vars(layer)))
    return {at: actions for at, actions in pauses.items() if at < total}


def _set_bias(proc: Any, value: np.ndarray) -> Action:
    return lambda read: proc.bias_mant.set(value.astype(np.int16))


def _read_state(layer: str, proc: Any, variables: tuple[str, ...]) -> Action:
    def read(into: dict[str, dict[str, list[np.ndarray]]]) -> None:
        for var in variables:
            into[layer][var].append(np.asarray(getattr(proc, var).get()).astype(np.int64))

    return read


def _sink_values(sink: Any) -> np.ndarray:
    """[n, steps] as received; 24-bit graded words sign-extended (lava's OutputVec.get_data does the same)."""
    data = np.asarray(sink.data.get()).astype(np.int64)
    return ((data.astype(np.int32) << 8) >> 8).astype(np.int64)


def _latency(outputs: Mapping[str, np.ndarray], built: PlanNetwork, expected: Expected, S: int, T: int, R: int) -> int:
    """The steps the embedded-IO adapters added: the smallest offset at which every output equals the expected."""
    for lag in range(MAX_IO_LATENCY + 1):
        if all(
            np.array_equal(
                align(outputs[n].T, S, T, R, built.sink_depth[n] + lag, expected.outputs[n].shape[2:]),
                expected.outputs[n],
            )
            for n in outputs
        ):
            return lag
    return 0


def _first_mismatch(
    got: Mapping[str, np.ndarray], held: Mapping[str, Mapping[str, np.ndarray]], expected: Expected
) -> dict[str, Any] | None:
    for name, values in got.items():
        want = expected.outputs[name]
        if values.shape != want.shape:
            return {"output": name, "shape": list(values.shape), "expected_shape": list(want.shape)}
        diff = np.argwhere(values != want)
        if len(diff):
            s, t, i = (int(v) for v in diff[0])
            return {"output": name, "sample": s, "time_step": t, "index": i,
                    "value": int(values[s, t, i]), "expected": int(want[s, t, i])}  # fmt: skip
    for layer, d in held.items():
        for var, values in d.items():
            diff = np.argwhere(values != expected.states[layer][var])
            if len(diff):
                s, i = (int(v) for v in diff[0])
                return {"state": f"{layer}.{var}", "sample": s, "index": i,
                        "value": int(values[s, i]), "expected": int(expected.states[layer][var][s, i])}  # fmt: skip
    return None


def host_readout(graph: Graph, got: Mapping[str, np.ndarray]) -> np.ndarray | None:
    """The readout's own step on the chip's token sums (a single token: the sum is its first operation), every
    step, summed over the steps; None for a network without one."""
    readouts = [graph.nodes[n] for n in graph.order if kernel(graph.nodes[n].op).spec.out_kind == LOGITS]
    if not readouts:
        return None
    node = readouts[0]
    sums = got[f"{node.name}.token_sum"]  # [S, T, C]
    ctx = HostStep({node.name: node.params})
    step = kernel(node.op).step
    return np.asarray(np.sum([step(ctx, node, [sums[:, t, None, :]], {}, {}) for t in range(graph.T)], axis=0))


class PlanProbe:
    """Lava's Loihi 2 profiler callbacks (lava-loihi's ``lava.utils.loihi2_profiler``), as lava-dl's PilotNet
    benchmark notebooks attach them: ``Loihi2HwCfg(callback_fxs=[Loihi2Power(num_steps), Loihi2ExecutionTime(),
    Loihi2Memory(), Loihi2Activity()])``."""

    def __init__(self, hardware: bool) -> None:
        self.hardware = hardware
        self.power: Any = None
        self.time: Any = None
        self.memory: Any = None
        self.activity: Any = None
        self.reason = ""

    def config(self, steps: int) -> Any:  # Loihi2HwCfg (untyped)
        from lava.magma.core.run_configs import Loihi2HwCfg

        try:
            from lava.utils import loihi2_profiler
        except ImportError as err:
            self.reason = f"lava.utils.loihi2_profiler not importable ({err})"
            return Loihi2HwCfg()
        self.power = loihi2_profiler.Loihi2Power(num_steps=steps)
        self.time = loihi2_profiler.Loihi2ExecutionTime()
        self.memory = loihi2_profiler.Loihi2Memory()
        self.activity = loihi2_profiler.Loihi2Activity()
        return Loihi2HwCfg(callback_fxs=[self.power, self.time, self.memory, self.activity])

    def chip_profile(self) -> dict[str, Any]:
        """Per NeuroCore: its SRAM use (Loihi2Memory: ``total_mpds``, used / total) and its activity
        (Loihi2Activity: synaptic ops, dendrite updates, spikes in and out), as the benchmark notebooks plot them."""
        out: dict[str, Any] = {"label": "measured (lava.utils.loihi2_profiler: Loihi2Memory, Loihi2Activity)"}
        for name, logger, fields in (
            ("memory", self.memory, MEMORY_FIELDS),
            ("activity", self.activity, ACTIVITY_FIELDS),
        ):
            got = {f: getattr(logger, f, None) for f in fields} if logger is not None else {}
            out[name] = {f: np.asarray(v).ravel()[:HALA_POINT_CORES].tolist() for f, v in got.items() if v is not None}
        return out

    def results(self, samples: int, steps: int) -> dict[str, Any]:
        """Measured power and time (board-level: an idle chip's static power is in them on multi-chip boards)."""
        if self.power is None:
            return {"available": False, "reason": self.reason or "no profiler attached"}
        total_w = float(np.mean(self.power.total_power))
        static = getattr(self.power, "static_total_power", None)
        static_w = float(np.mean(static)) if static is not None else None
        step_s = float(self.time.avg_time_per_step) * 1e-6  # the profiler reports microseconds
        seconds = step_s * steps
        out: dict[str, Any] = {
            "available": True,
            "label": "measured (lava.utils.loihi2_profiler: Loihi2Power, Loihi2ExecutionTime)",
            "per_inference": True,
            "time_per_step_s": step_s,
            "total_power_W": total_w,
            "total_J": total_w * seconds / samples,
        }
        if static_w is not None:
            out |= {"static_power_W": static_w, "static_J": static_w * seconds / samples}
            out["dynamic_J"] = max(total_w - static_w, 0.0) * seconds / samples
        return out
