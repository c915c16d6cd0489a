"""The gathering stage, end to end: run reports (files or records) -> ``ReportInputs`` -> the summary, written.

``write_report`` is what ``spikeport.api.report`` does; ``summarize`` is the same without the files beside the
run reports (no check-hw, no ONNX Runtime timing) and without writing, for run reports already in memory.
The order of the work: the run reports are read and checked (a bad one fails before anything is measured),
the profiles loaded, then per run what lies beside it (the conversion report's float accuracy, check-hw on the
artifact once per artifact, ONNX Runtime on this CPU once per network), then per network the GPU baseline, then
the memory across runs; ``report.summary.build_summary`` turns that into the summary records.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from spikeport.atomic import check_output_file, write_json, write_or_fallback
from spikeport.errors import ConfigError, OutputPathError, ReportError, SpikeportError
from spikeport.gather import torchless
from spikeport.gather.cache import ReportCache, default_folder
from spikeport.gather.chip import chip_footprint
from spikeport.gather.cpu import cpu_baselines
from spikeport.gather.gpu import Found, gpu_baselines
from spikeport.gather.locate import locate_artifact
from spikeport.gather.memory import memory_inputs
from spikeport.gather.models import attention_cores, model_config, op_counters
from spikeport.hw_profiles import HwProfile, load_profile
from spikeport.ir.artifact import float_accuracy
from spikeport.ir.graph import Graph
from spikeport.report.html import write_html
from spikeport.report.inputs import ChipFootprint, CpuBaseline, FloatAccuracy, ReportInputs, ReportOptions, RunInput
from spikeport.report.model import ReportSummary
from spikeport.report.summary import build_summary
from spikeport.run_report import RunReport
from spikeport.runtime.targets import describe_executor

Say = Callable[[str], None]


def write_report(
    runs: Sequence[RunReport | str | os.PathLike[str]],
    sources: Sequence[str] | None,
    options: ReportOptions,
    read_graph: Callable[[Path], Graph],
    *,
    html: str | os.PathLike[str] | None = None,
    json: str | os.PathLike[str] | None = None,
    title: str = "spikeport report",
    progress: Say | None = None,
) -> ReportSummary:
    """``spikeport.api.report``: the summary of run reports given as files or records, with check-hw on each
    artifact (``options.chip``; ``read_graph`` reads an artifact or a netx file) and ONNX Runtime on this CPU
    (``options.cpu_baseline``, only beside a GPU baseline computed here), written to ``json`` and as a page to
    ``html`` when given."""
    for path, what in ((json, "report json"), (html, "report html")):
        if path is not None:
            check_output_file(path, what)
    files = [None if isinstance(r, RunReport) else Path(r) for r in runs]
    if sources is None:
        sources = [f"run report {i + 1}" if isinstance(r, RunReport) else str(r) for i, r in enumerate(runs)]
    if len(sources) != len(runs):
        raise ConfigError(f"{len(runs)} run reports but {len(sources)} source names")
    # each validated once here, with the op registry (a file as it is read, a record as it is): gather need not again
    loaded = [
        _validated(r, src) if isinstance(r, RunReport) else load_run_report(r)
        for r, src in zip(runs, sources, strict=True)
    ]
    say = progress or (lambda msg: None)
    cache = report_cache(options, say)
    inputs = beside(loaded, list(sources), options, read_graph, say, files, cache)
    summary = build_summary(gather(inputs, options=options, progress=progress, validated=True, cache=cache))
    failed = []  # both files are attempted before a failure of the first is raised
    if json is not None:
        data = summary.to_dict()
        failed += _attempt(lambda: write_or_fallback(json, lambda path: write_json(path, data), "the summary"))
    if html is not None:
        failed += _attempt(lambda: write_or_fallback(html, lambda p: write_html(summary, p, title=title), "the page"))
    if failed:
        raise failed[0]
    return summary


def report_cache(options: ReportOptions, say: Say) -> ReportCache:
    """The report cache the options ask for (``gather.cache``: off, the default folder, or ``cache_dir``)."""
    if not options.cache:
        return ReportCache(None)
    return ReportCache(options.cache_dir or default_folder(), say)


def _attempt(write: Callable[[], object]) -> list[Exception]:
    try:
        write()
    except OutputPathError as err:
        return [err]
    return []


def beside(
    runs: list[RunReport],
    sources: list[str],
    options: ReportOptions,
    read_graph: Callable[[Path], Graph],
    say: Say,
    files: Sequence[Path | None] | None = None,
    cache: ReportCache | None = None,
) -> list[RunInput]:
    """What lies beside each run report: its artifact (``gather.locate``: as written, from the run report's folder
    ``files[i]``, or by digest), the conversion report's float accuracy, check-hw on the artifact (on the first
    neuromorphic profile, once per artifact), ONNX Runtime on this CPU (once per network; only beside a GPU baseline
    made here, not one read from a bench file). An artifact not found, or that check-hw cannot read, is a ReportError
    naming the run report, unless ``options.allow_missing`` (a note) or not ``options.chip``. All artifacts are
    found before anything is run; ``cache`` keeps check-hw and the timings across reports."""
    cache = cache or ReportCache(None)
    files = list(files) if files is not None else [None] * len(runs)
    chip = options.chip
    cpu = options.cpu_baseline and options.gpu_baseline and not options.gpu_bench
    priced, _ = profiles_of(options)
    cfgs = [model_config(run, source, cache) for run, source in zip(runs, sources, strict=True)]
    profile = next((p for p in priced if p.kind == "neuromorphic"), None)
    required = chip and profile is not None and not options.allow_missing  # a footprint to count: not found fails
    found = [_artifact(run, source, file, required) for run, source, file in zip(runs, sources, files, strict=True)]
    footprints: dict[tuple[str, str | None], tuple[ChipFootprint | None, str]] = {}
    timed: dict[str, list[CpuBaseline]] = {}
    out = []
    for run, source, cfg, (path, note) in zip(runs, sources, cfgs, found, strict=True):
        accuracy = FloatAccuracy.of(float_accuracy(path, run.artifact_digest)) if path is not None else None
        inp = RunInput(run, source, accuracy, artifact_path=None if path is None else str(path), artifact_note=note)
        if chip and profile is not None and path is not None:
            key = (str(path.resolve()), run.artifact_digest)
            if key not in footprints:
                footprints[key] = _footprint(path, run, source, profile, read_graph, say, cache, options)
            inp.chip, inp.chip_note = footprints[key]
        elif chip and profile is not None:
            inp.chip_note = note  # not found, allowed: why
        elif chip:
            inp.chip_note = "no neuromorphic profile among --profile"
        else:
            inp.chip_note = "not asked for (--no-chip)"
        if cpu:
            inp.cpu = cpu_baselines(path, run.artifact_digest, cfg, timed, say, cache)
        out.append(inp)
    return out


def _artifact(run: RunReport, source: str, file: Path | None, required: bool) -> tuple[Path | None, str]:
    """(where the run's artifact is, or None; how it was found, or why not). Not found where ``required`` (a chip
    footprint to count, no ``allow_missing``): a ReportError naming the run report, the path it gives and where it
    was looked for."""
    if not run.artifact:
        return None, "the run report names no artifact"
    found = locate_artifact(run.artifact, run.artifact_digest, file)
    if found.path is not None:
        return (
            found.path,
            "" if found.how == "as written" else f"artifact {run.artifact} found {found.how}: {found.path}",
        )
    problem = found.problem(run.artifact, run.artifact_digest)
    if required:
        raise ReportError(
            source,
            "artifact",
            f"{problem}: its chip footprint cannot be counted (copy the artifact back, or give --allow-missing to "
            "report it without, --no-chip to report no footprint)",
        )
    return None, problem


def _footprint(
    path: Path,
    run: RunReport,
    source: str,
    profile: HwProfile,
    read_graph: Callable[[Path], Graph],
    say: Say,
    cache: ReportCache,
    options: ReportOptions,
) -> tuple[ChipFootprint | None, str]:
    """check-hw's footprint of the artifact at ``path``, or (None, why) where check-hw cannot read it and
    ``options.allow_missing`` (else a ReportError naming the run report)."""
    try:
        footprint = chip_footprint(path, run.artifact_digest, profile, read_graph, say, cache)
        return with_measured_cores(footprint, run, source), ""
    except (SpikeportError, ImportError) as err:
        problem = f"check-hw could not read {path}: {err}"
        if not options.allow_missing:
            raise ReportError(source, "artifact", f"{problem} (--allow-missing reports the run without it)") from None
        return None, problem


def with_measured_cores(footprint: ChipFootprint, run: RunReport, source: str) -> ChipFootprint:
    """The footprint with the cores Lava's compiler took where the run was on Loihi 2 and kept its table."""
    table = run.hardware.compile_table if run.hardware is not None else None
    if not table or not table.get("available"):
        return footprint
    return replace(footprint, measured_cores=int(table["cores"]), measured_from=f"{source} (Lava's compiler)")


def gather(
    run_reports: Sequence[RunInput | RunReport | dict[str, Any]],
    sources: Sequence[str] | None = None,
    options: ReportOptions | None = None,
    progress: Say | None = None,
    validated: bool = False,
    cache: ReportCache | None = None,
) -> ReportInputs:
    """The report's inputs of run reports already loaded (``RunInput``, ``RunReport`` or their JSON objects), each
    validated (``RunReport.validate`` with the op registry: a ReportError naming its source and the field;
    ``validated``: RunInputs the caller has just validated are taken as they are): the profiles loaded, each
    network's GPU baseline (``options.gpu_baseline``), the memory across runs. ``sources`` names each run in the
    output; ``cache`` (default: the options') keeps GPU estimates and the analytic memory across reports."""
    opts = options or ReportOptions()
    if not run_reports:
        raise ConfigError("give at least one run report")
    sources = list(sources or [getattr(r, "source", "") or f"run report {i + 1}" for i, r in enumerate(run_reports)])
    if len(sources) != len(run_reports):
        raise ConfigError(f"{len(run_reports)} run reports but {len(sources)} source names")
    inputs = [_as_input(run, src, validated) for run, src in zip(run_reports, sources, strict=True)]
    priced, gpu_profiles = profiles_of(opts)
    say = progress or (lambda msg: None)
    kept = cache or report_cache(opts, say)
    cfgs = [model_config(inp.report, inp.source, kept) for inp in inputs]
    if opts.gpu_baseline:
        networks: dict[str, Found] = {}
        for inp, cfg in zip(inputs, cfgs, strict=True):
            inp.gpu, inp.gpu_notes = gpu_baselines(cfg, gpu_profiles, opts, networks, say, kept)
    attentions = [(inp.report.model or {}).get("attention") for inp in inputs]
    memory = memory_inputs(cfgs, attentions, priced, opts.measure_memory, say, kept)
    left_out = [n for inp in inputs for n in inp.gpu_notes] + memory.notes  # without torch: what, why (torchless)
    return ReportInputs(
        runs=inputs,
        options=opts,
        priced=priced,
        gpu_profiles=gpu_profiles,
        memory=memory,
        attention_cores=attention_cores(attentions, kept),
        left_out=[n for n in dict.fromkeys(left_out) if n in torchless.LEFT_OUT],
    )


def summarize(
    run_reports: Sequence[RunInput | RunReport | dict[str, Any]],
    profiles: Sequence[str | HwProfile] | None = None,
    gpus: Sequence[str | HwProfile] | None = None,
    sources: list[str] | None = None,
    options: ReportOptions | None = None,
    progress: Say | None = None,
) -> ReportSummary:
    """The summary of run reports already loaded: ``gather`` then ``report.summary.build_summary``.
    ``profiles`` (names, .yaml paths, HwProfile) and ``gpus`` (GPU profiles) replace ``options``'s when given."""
    opts = options or ReportOptions()
    if profiles is not None:
        opts = replace(opts, profiles=tuple(profiles))
    if gpus is not None:
        opts = replace(opts, gpus=tuple(gpus))
    return build_summary(gather(run_reports, sources, opts, progress))


def load_run_report(path: str | os.PathLike[str]) -> RunReport:
    """Read and validate a run report (schema spikeport.run v1), its layers held to the op registry; errors name the
    file and the field."""
    return RunReport.from_json(Path(path), op_counters())


def _validated(run: RunReport, source: str) -> RunReport:
    """A run report made in memory, validated as a file is (its layers held to the op registry)."""
    run.validate(source, op_counters())
    return run


def resolve_profiles(
    profiles: Sequence[str | HwProfile], gpus: Sequence[str | HwProfile]
) -> tuple[list[HwProfile], list[HwProfile]]:
    """(op-count profiles, GPU profiles): every name or path loaded (and validated) once; a GPU profile
    given among ``profiles`` joins the GPU baselines."""
    priced: list[HwProfile] = []
    gpu: list[HwProfile] = []
    for p in profiles:
        prof = load_profile(p) if not isinstance(p, HwProfile) else p
        (gpu if prof.kind == "gpu" else priced).append(prof)
    for g in gpus:
        prof = load_profile(g) if not isinstance(g, HwProfile) else g
        if prof.kind != "gpu":
            raise ConfigError(
                f"--gpu {g}: profile '{prof.name}' is a {prof.kind} profile, not a GPU (pass it with --profile)"
            )
        if all(prof.name != q.name for q in gpu):
            gpu.append(prof)
    return priced, gpu


def profiles_of(options: ReportOptions) -> tuple[list[HwProfile], list[HwProfile]]:
    """``resolve_profiles`` of the options, refusing a report without a profile to price the op counts with."""
    priced, gpu = resolve_profiles(options.profiles, options.gpus)
    if not priced:
        raise ConfigError("no neuromorphic or CMOS profile to price the op counts with (e.g. --profile loihi2)")
    return priced, gpu


def _as_input(run: RunInput | RunReport | dict[str, Any], source: str, validated: bool = False) -> RunInput:
    """A RunInput of a run given any way, validated (a one-line ReportError naming ``source`` and the field), with
    its executor in words (its target's record); ``validated``: the caller has just validated its RunInputs'
    reports (``write_report``)."""
    if isinstance(run, RunInput):
        inp = run if validated else replace(run, report=_validated(run.report, run.source or source))
    elif isinstance(run, RunReport):
        inp = RunInput(_validated(run, source), source)
    else:
        inp = RunInput(RunReport.from_dict(run, source, op_counters()), source)
    return replace(inp, executor=inp.executor or describe_executor(inp.report.executor) or "")
