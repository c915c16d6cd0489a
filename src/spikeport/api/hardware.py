"""An artifact on Loihi 2: check-hw's placement, a bundle for the chip, its Lava network for one's own program, and
a hardware profile calibrated on measured runs."""

from __future__ import annotations

import os
import sysconfig
from collections.abc import Sequence
from dataclasses import replace as replaced
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from spikeport import file_kinds
from spikeport.api._keywords import _renamed
from spikeport.api.choices import Dataset
from spikeport.api.running import artifact_inputs
from spikeport.atomic import check_new_folder, check_not_an_input
from spikeport.errors import ConfigError
from spikeport.run_report import RunReport
from spikeport.runtime.loihi2.drive import ChipDrive

if TYPE_CHECKING:
    from spikeport.hw_profiles import HwProfile
    from spikeport.metrics.calibrate import Calibration
    from spikeport.runtime.loihi2.bundle import Bundle
    from spikeport.runtime.loihi2.core_fit import CoreFit, TableOnNetwork as CoreTable
    from spikeport.runtime.loihi2.embed import LavaEmbedding
    from spikeport.runtime.loihi2.hw_records import HwCheck
else:  # typing.get_type_hints resolves each name on use (spikeport.api._hints)
    from spikeport.api._hints import _hint

    HwProfile = _hint("hw_profiles.HwProfile")
    Calibration = _hint("metrics.calibrate.Calibration")
    Bundle = _hint("runtime.loihi2.bundle.Bundle")
    HwCheck = _hint("runtime.loihi2.hw_records.HwCheck")
    CoreFit = _hint("runtime.loihi2.core_fit.CoreFit")
    CoreTable = _hint("runtime.loihi2.core_fit.TableOnNetwork")
    LavaEmbedding = _hint("runtime.loihi2.embed.LavaEmbedding")


def check_hw(
    artifact: str | os.PathLike[str],
    profile: str | os.PathLike[str] | HwProfile = "loihi2",
    *,
    input_shape: Sequence[int] | None = None,
    **options: Any,
) -> HwCheck:
    """Hardware readiness of a converted artifact or a lava-dl netx file (``input_shape``: a netx file's input,
    H,W,C or N): which Lava processes go on the chip, which stay on the host, the cores, the state each holds,
    the limits broken (``HwCheck``; ``.to_dict()`` is schema spikeport.check_hw). ``options`` go to
    ``runtime.loihi2.check_hw.check_hw``."""
    from spikeport.hw_profiles import HwProfile, load_profile
    from spikeport.runtime.loihi2.check_hw import check_hw as check
    from spikeport.runtime.sources import Source

    source = Source.open(artifact, "check-hw")
    prof = profile if isinstance(profile, HwProfile) else load_profile(str(profile))
    if isinstance(options.get("run_report"), (str, os.PathLike)):  # a run report's file: its measured rates
        options["run_report"] = RunReport.from_json(options["run_report"])
    return check(source.file_graph(tuple(input_shape) if input_shape else None), prof, **options)


def bundle(
    artifact: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    samples: int = 4,
    dataset: Dataset | None = None,
    data_dir: str | None = None,
    drive: ChipDrive | Literal["bias", "adapter"] | None = None,
    states: Sequence[str] = (),
    slurm_partition: str | None = None,
    force: bool = False,
    partition: str | None = None,
) -> Bundle:
    """A folder that runs ``artifact``'s hardware plan on Loihi 2 as it is (runtime/loihi2/bundle.py): its first
    ``samples`` test images with the reference's expected outputs and ``states``, submitted to the SLURM partition
    ``slurm_partition`` (default: the one check-hw's chips need; ``partition`` is its old name, deprecated);
    ``force`` replaces ``out``."""
    from spikeport.runtime.sources import Source

    source = Source.open(artifact, "bundle", file_kinds.ARTIFACT_ONLY)
    check_new_folder(out, force, "bundle folder")  # before the data, the reference run and check-hw
    from spikeport.runtime.loihi2.bundle import write_bundle

    graph = source.graph
    x, y = artifact_inputs(source, samples, dataset, data_dir)
    return write_bundle(
        graph,
        artifact,
        x,
        y,
        out,
        drive=drive,
        states=tuple(states),
        partition=_renamed("partition", partition, "slurm_partition", slurm_partition),
        replace=force,
    )


def lava_network(artifact: str | os.PathLike[str], *, hardware: bool = False) -> LavaEmbedding:
    """The artifact's Lava network for a Lava program of one's own (runtime/loihi2/embed.py): its processes, the
    ``input`` port a RingBuffer of ``pixels(images)`` connects to, the ``outputs`` ports sinks read, and the run
    config; ``steps``, ``per_sample`` and ``predict`` keep its timing. ``hardware``: Intel's embedded-IO adapters
    and Loihi2HwCfg (lava-loihi) instead of pass-through stand-ins and Loihi2SimCfg."""
    from spikeport.runtime.loihi2.embed import lava_network as embedding
    from spikeport.runtime.sources import Source

    return embedding(Source.open(artifact, "lava_network", file_kinds.ARTIFACT_ONLY).graph, hardware=hardware)


def calibrate(
    runs: Sequence[str | os.PathLike[str] | RunReport],
    out: str | os.PathLike[str],
    *,
    profile: str | os.PathLike[str] | HwProfile = "loihi2",
    name: str | None = None,
) -> Calibration:
    """Fit ``profile``'s energy constants to measured run reports and write the fitted profile to ``out``
    (metrics/calibrate.py: per-op energies x one least-squares scale, static power and time step the measured
    means, provenance in its ``calibration`` section)."""
    from spikeport.hw_profiles import HwProfile, load_profile
    from spikeport.metrics.calibrate import calibrate as fit, write_profile

    inputs = [r for r in runs if not isinstance(r, RunReport)]
    check_not_an_input(out, [*inputs, *([] if isinstance(profile, HwProfile) else [profile])], "calibrate --out")
    base = profile if isinstance(profile, HwProfile) else load_profile(str(profile))
    for run_file in runs:
        if not isinstance(run_file, RunReport):
            file_kinds.expect(run_file, file_kinds.RUN_REPORTS, "calibrate")
    loaded = [(str(r), RunReport.from_json(r)) if not isinstance(r, RunReport) else ("run", r) for r in runs]
    cal = fit(loaded, base, name)
    write_profile(cal, out)
    return cal


def calibrate_cores(
    tables: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    profile: str | os.PathLike[str] | HwProfile = "loihi2",
    name: str | None = None,
    check: Sequence[str | os.PathLike[str]] = (),
) -> CoreFit:
    """Refit ``profile``'s core model (its ``core_model`` synapse formats) on compile tables and write the profile
    to ``out`` (runtime/loihi2/core_fit.py). Each table is a bundle's ``result.json`` from a run on Loihi 2 (the
    compiler's table it kept, read against the bundle's model.spk.h5) or a public table by name
    (``pilotnet_lif``, ``pilotnet_sdnn``, ``oxford``, ``mnist``, ``yolo_kp``; ``NAME=NETWORK.net`` where its network
    file is not found); ``check``: tables to report the refitted model on without fitting on them."""

    from spikeport.hw_profiles import HwProfile, load_profile
    from spikeport.metrics.calibrate import Calibration, write_profile
    from spikeport.runtime.loihi2 import core_fit
    from spikeport.runtime.loihi2.core_model import CoreModel

    base = profile if isinstance(profile, HwProfile) else load_profile(str(profile))
    points = [_table_point(t, base) for t in tables]
    checks = [_table_point(t, base) for t in check]
    fitted = core_fit.fit(points, CoreModel.of(base), checks)
    sections = {section: dict(entries) for section, entries in base.sections.items()}
    sections["core_model"] |= core_fit.fitted_model_entries(base, fitted)
    calibration = dict(base.calibration) | {
        "core_model": fitted.to_dict() | {"method": core_fit.__doc__.split("\n")[0]}
    }
    refit = replaced(base, name=name or f"{base.name}-refit", sections=sections, calibration=calibration)
    write_profile(Calibration(refit, 1.0, []), out)
    return fitted


def _table_point(spec: str | os.PathLike[str], base: HwProfile) -> CoreTable:
    """A compile table to fit on: a public one by name (NAME or NAME=NETWORK) or a bundle's result.json."""
    from spikeport.runtime.loihi2 import core_fit
    from spikeport.runtime.loihi2.compile_table import public_tables

    text = str(spec)
    tables = public_tables()
    name, _, network = text.partition("=")
    if name in tables:
        table = tables[name]
        path = Path(network) if network else _public_network(table.network["file"])
        if path is None or not path.is_file():
            raise ConfigError(
                f"compile table '{name}': its network ({table.network['file']}) is not here: give it as "
                f"{name}=PATH/TO/network.net"
            )
        return core_fit.on_network(table, check_hw(path, base))
    if not Path(text).is_file():
        raise ConfigError(
            f"compile table '{text}': expected a bundle's result.json from Loihi 2 or a public table "
            f"({', '.join(sorted(tables))})"
        )
    return core_fit.from_result(Path(text), lambda artifact: check_hw(artifact, base))


def _public_network(where: str) -> Path | None:
    """A public table's network: the file lava-dl's wheel installs, or the copy in a spikeport checkout's tests."""
    if where.startswith("lava-dl wheel: "):
        return Path(sysconfig.get_paths()["purelib"]) / where.removeprefix("lava-dl wheel: ")
    checkout = Path(__file__).resolve().parents[3] / where
    return checkout if where.startswith("tests/") and checkout.is_file() else None
