"""Recording inside the spiking processes' own CPU models: what a LIF sends is what the run records.

A ``SpikeRecorder`` per recorded layer is one more Lava process (an OS process with its own channel and its own
share of every time step's synchronisation): with one per spiking layer a run spent about half its step time on
them (issue 14). These models are Lava's own bit-accurate LIF / LIFReset CPU models with one addition: when the
process's ``proc_params`` name a recording (``RECORD_KEY``: a .npy memory map and its row offset, as a
``SpikeRecorder`` takes them), every vector the model sends on ``s_out`` is also written to row
``offset + time_step - 1``, the row a ``SpikeRecorder`` fed by that port would write. The dynamics are
untouched (the subclass only wraps the port's ``send``), so the recorded spikes are those the network computed.

They are selected per run with ``exception_proc_model_map`` (``recording_config``), and only for processes whose
run config would pick the exact base model; any other spiking process keeps a ``SpikeRecorder``.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from lava.magma.compiler.compiler_graphs import ProcGroupDiGraphs
from lava.proc.lif.models import PyLifModelBitAcc, PyLifResetModelBitAcc

RECORD_KEY = "spikeport_record"  # proc_params entry: {"path": .npy memory map, "offset": row of step 1, "skip": n}


class _RecordsWhatItSends:
    """Mixin for a PyLoihiProcessModel with an ``s_out`` port (see the module docstring)."""

    proc_params: Any
    time_step: int
    s_out: Any
    _recording_started = False

    def run_spk(self) -> None:
        if not self._recording_started:
            self._recording_started = True
            spec = self.proc_params.get(RECORD_KEY)
            if spec is not None:
                self._record_sends(spec)
        super().run_spk()  # type: ignore[misc]  # the Lava model this mixin is combined with

    def _record_sends(self, spec: dict[str, Any]) -> None:
        store = np.load(spec["path"], mmap_mode="r+")
        send = self.s_out.send

        def send_and_record(data: np.ndarray) -> None:
            row = spec["offset"] + self.time_step - 1
            if self.time_step > spec["skip"] and row < store.shape[0]:
                store[row] = data
            send(data)

        self.s_out.send = send_and_record


class RecordingLifModel(_RecordsWhatItSends, PyLifModelBitAcc):
    pass


class RecordingLifResetModel(_RecordsWhatItSends, PyLifResetModelBitAcc):
    pass


RECORDING = {PyLifModelBitAcc: RecordingLifModel, PyLifResetModelBitAcc: RecordingLifResetModel}


def record_in_models(run_cfg: Any, specs: dict[Any, dict[str, Any]]) -> tuple[Any, set[Any]]:
    """(run config, the processes that record themselves): each process of ``specs`` (process -> its recording)
    whose model under ``run_cfg`` has a recording twin gets the twin (through a copy of the config's exception map)
    and its recording in ``proc_params``; the caller connects a SpikeRecorder to the others."""
    cfg = copy.copy(run_cfg)
    cfg.exception_proc_model_map = dict(run_cfg.exception_proc_model_map or {})
    recording = set()
    for proc, spec in specs.items():
        chosen = run_cfg.select(proc, ProcGroupDiGraphs._find_proc_models(proc))
        if chosen in RECORDING:  # a process of the same class that records nothing runs the twin unchanged
            cfg.exception_proc_model_map[type(proc)] = RECORDING[chosen]
            proc.proc_params[RECORD_KEY] = dict(spec)
            recording.add(proc)
    return cfg, recording
