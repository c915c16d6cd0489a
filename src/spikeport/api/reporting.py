"""Run reports -> the report: energy, memory, chip footprint and GPU baselines (the work is spikeport.gather's)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from spikeport import file_kinds
from spikeport.api.choices import IntegerInputs, Precision
from spikeport.api.files import load_graph
from spikeport.run_report import RunReport

if TYPE_CHECKING:
    from spikeport.report.model import ReportSummary
else:  # typing.get_type_hints resolves each name on use (spikeport.api._hints)
    from spikeport.api._hints import _hint

    ReportSummary = _hint("report.model.ReportSummary")


def report(
    runs: Sequence[RunReport | str | os.PathLike[str]],
    *,
    sources: Sequence[str] | None = None,
    profiles: Sequence[str] = ("loihi2", "cmos45nm"),
    gpus: Sequence[str] = ("h100",),
    gpu_bench: Sequence[str | os.PathLike[str] | dict[str, Any]] = (),
    gpu_baseline: bool = True,
    vit: bool = True,
    cpu_baseline: bool = True,
    chip: bool = True,
    allow_missing: bool = False,
    cache: bool | str | os.PathLike[str] = True,
    measure_memory: bool = False,
    integer_inputs: IntegerInputs = "value_acs",
    first_layer_per_timestep: bool = True,
    precision: Precision = "fp32",
    html: str | os.PathLike[str] | None = None,
    json: str | os.PathLike[str] | None = None,
    title: str = "spikeport report",
    progress: Callable[[str], None] | None = None,
) -> ReportSummary:
    """The summary (schema ``spikeport.report`` v1, a ``report.model.ReportSummary``; ``.to_dict()`` is the JSON)
    of run reports given as files or RunReports: per run and per inference the counts, the energy estimate of
    every hw profile, the state memory, the chip footprint of the artifact that ran (check-hw on the first
    neuromorphic profile; ``chip=False`` skips it) and the GPU baseline of the same network (measured on CUDA,
    otherwise estimated from ``gpus``, with ONNX Runtime measured on this CPU beside it unless
    ``cpu_baseline=False``; ``gpu_bench``: the JSON of `spikeport bench gpu`). Written to ``json`` and as a
    self-contained page to ``html`` when given. The counting rule (``integer_inputs``,
    ``first_layer_per_timestep``, ``precision``) is docs/counting.md's. The work is ``spikeport.gather``'s.

    Each run report's artifact is found as written, from the run report's folder, or by its digest; one not found
    is a ReportError naming the run report unless ``allow_missing`` (that run then has no chip footprint, said in
    a note). ``cache``: check-hw, the CPU timings, GPU estimates and the analytic memory are kept across reports
    (True: in ``$XDG_CACHE_HOME/spikeport/report``; a folder: there; False: worked out again)."""
    from spikeport.baselines.gpu_bench import load_bench
    from spikeport.gather.stage import write_report
    from spikeport.metrics.energy import CountingRule
    from spikeport.report.inputs import ReportOptions

    for run_file in runs:
        if isinstance(run_file, (str, os.PathLike)):
            file_kinds.expect(run_file, file_kinds.RUN_REPORTS, "report")
    rule = CountingRule(integer_inputs, first_layer_per_timestep, precision)
    benches = tuple(b if isinstance(b, dict) else load_bench(b) for b in gpu_bench)
    options = ReportOptions(tuple(profiles), tuple(gpus), rule, gpu_baseline, vit, benches)
    options = replace(
        options,
        measure_memory=measure_memory,
        chip=chip,
        cpu_baseline=cpu_baseline,
        allow_missing=allow_missing,
        cache=cache is not False,
        cache_dir=None if isinstance(cache, bool) else os.fspath(cache),
    )
    return write_report(runs, sources, options, load_graph, html=html, json=json, title=title, progress=progress)
