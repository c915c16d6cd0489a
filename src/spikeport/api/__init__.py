"""The Python API: ``spikeport.train``, ``spikeport.convert``, ``spikeport.run``, ``spikeport.report``.

One function per step of the pipeline (DESIGN.md section 1), each returning a typed result:

==========================  ===========================================================================
``train(...)``              a float run folder (``TrainResult``), or with ``qat=True`` a fine-tuned
                            artifact (``QatResult``)
``convert(checkpoint)``     ``<name>.spk.h5`` + ``<name>.onnx`` + the conversion report (``ConversionResult``)
``run(artifact, backend)``  a :class:`~spikeport.run_report.RunReport` (schema ``spikeport.run``), with the
                            layer-by-layer comparison against the reference when ``compare="reference"``
``report(runs)``            energy / memory / GPU-baseline summary of run reports (schema ``spikeport.report``)
==========================  ===========================================================================

The command line (``spikeport/cli``) parses flags, calls one of these and prints what it returns;
``spikeport demo`` chains them. Nothing here imports torch or lava until a function needs it, so
``import spikeport.api`` stays cheap and the deploy side (``run`` on a netx file) works without torch.

The functions live in modules that follow the data (each re-exported here): ``training`` (train_config, train,
info), ``converting`` (convert, convert_netx, convert_nir, supported_modules), ``running`` (run, source, test_images,
targets, rank), ``reporting`` (report), ``hardware`` (check_hw, bundle, lava_network, calibrate), ``files``
(load_graph, inspect, artifact_source, the exports), ``diagnostics`` (bench_gpu, memory, neurobench, analyze,
ablation, simulate_*); ``choices`` holds the Literal choice types and ``_hints`` what lets ``typing.get_type_hints``
resolve the annotations without importing torch.
"""

from __future__ import annotations

from spikeport.api.choices import (
    Attention,
    AttentionForm,
    Backend,
    ChipDriveName,
    Dataset,
    Drive,
    InputDriveName,
    InputLayout,
    IntegerInputs,
    Precision,
)
from spikeport.api.converting import (
    ONNX_CHECK_SAMPLES as ONNX_CHECK_SAMPLES,
    convert,
    convert_netx,
    convert_nir,
    supported_modules,
)
from spikeport.api.diagnostics import (
    ablation,
    analyze,
    bench_gpu,
    memory,
    neurobench,
    simulate_particles,
    simulate_sweep,
)
from spikeport.api.files import (
    artifact_source,
    export_netx,
    export_nir,
    export_onnx,
    inspect,
    is_netx_file,
    is_nir_file,
    load_graph,
    stale_conversion_report,
)
from spikeport.api.hardware import bundle, calibrate, calibrate_cores, check_hw, lava_network
from spikeport.api.reporting import report
from spikeport.api.running import (  # target and leave_no_torchrun_folders: the CLI's, not in __all__
    leave_no_torchrun_folders as leave_no_torchrun_folders,
    rank,
    run,
    source,
    target as target,
    targets,
    test_images,
)
from spikeport.api.training import info, train, train_config
from spikeport.netx.drive import InputDrive  # the CLI's --input-drive choices (no numpy: a light module)
from spikeport.run_report import RunReport
from spikeport.runtime.loihi2.drive import ChipDrive  # check-hw's, bundle's and --backend loihi2's input drive

__all__ = [
    "Attention",
    "AttentionForm",
    "Backend",
    "ChipDrive",
    "ChipDriveName",
    "Dataset",
    "Drive",
    "InputDrive",
    "InputDriveName",
    "InputLayout",
    "IntegerInputs",
    "Precision",
    "RunReport",
    "ablation",
    "analyze",
    "artifact_source",
    "bench_gpu",
    "bundle",
    "calibrate",
    "calibrate_cores",
    "check_hw",
    "convert",
    "convert_netx",
    "convert_nir",
    "export_netx",
    "export_nir",
    "export_onnx",
    "info",
    "inspect",
    "is_netx_file",
    "is_nir_file",
    "lava_network",
    "load_graph",
    "memory",
    "neurobench",
    "rank",
    "report",
    "run",
    "simulate_particles",
    "source",
    "simulate_sweep",
    "stale_conversion_report",
    "supported_modules",
    "targets",
    "test_images",
    "train",
    "train_config",
]
