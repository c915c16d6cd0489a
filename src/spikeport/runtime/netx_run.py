"""Running lava-dl netx files (and artifacts converted from them) on any Target.

A netx network has no readout: its prediction is the output layer's most active neuron (spike count over the
sample; lava-dl's rate-classifier convention), or the final ``v`` of a non-spiking output integrator
(mnist.net), or none where the last layer is no vector of class scores. :func:`prepare` applies the input rules
(drive, steps, layout, shapes) and builds the graph for the inputs' length; its ``readout`` turns a recorded run
into the netx run report (``RunReport.netx``); :func:`run_network` does both on a Target. Each works on the file's
``runtime.sources.Source``, sniffed once: which options a netx file or a converted artifact takes is declared there.
The files themselves (the reader, input layouts and .npy loading, converted artifacts) are the ``spikeport.netx``
package's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np

from spikeport.errors import ConfigError, DataError, unknown_choice
from spikeport.ir.graph import Graph
from spikeport.ir.limits import MAX_T
from spikeport.netx.drive import InputDrive
from spikeport.netx.inputs import (
    INPUT_LAYOUTS,
    check_bias_inputs,
    check_graded_inputs,
    load_inputs,
    to_spikeport_layout,
)
from spikeport.netx.read import graph_from_netx
from spikeport.netx.to_artifact import converted_input_drive
from spikeport.run_report import NetxRun, RunReport
from spikeport.runtime.recording import Spikes, recorded, v_key
from spikeport.runtime.sources import Inputs, Source, SourceOptions
from spikeport.runtime.targets import RunInputs, RunOptions, Target, run_graph, target


@dataclass(frozen=True)
class NetxWorkload:
    """A netx network ready to run: its graph for the inputs' length, the inputs in spikeport's layout."""

    path: str
    graph: Graph
    inputs: np.ndarray
    drive: InputDrive

    def readout(self, report: RunReport) -> RunReport:
        """The run report of a recorded run with the netx predictions and the ``netx`` block."""
        if report.recording is None:
            raise ValueError("a netx run reads its predictions from the recording: run with RunOptions(record=True)")
        graph, spikes, S = self.graph, report.recording, len(self.inputs)
        last = recorded(graph)[-1]
        predictions = output_predictions(graph, spikes)
        info = NetxRun(
            file=self.path,
            input_shape=list(graph.nodes["input"].shape),
            input_drive=self.drive.value,  # the run report holds the name
            prediction="argmax of the last layer's spike counts",
        )
        if not class_scores(graph):
            info.prediction = (
                f"none: the last layer '{last}' is {list(graph.nodes[last].shape)}, not a vector of class scores "
                "(the file has no classifier readout)"
            )
        if v_key(last) in spikes:  # a non-spiking integrator: its v is the result
            info.prediction = "argmax of the output integrator's v at the last step"
            info.output_v = np.asarray(spikes[v_key(last)])[:, -1].reshape(S, -1).tolist()
            info.output_layer = last
        if self.drive is InputDrive.GRADED:  # an SDNN network's result is its output layer's values, not a class
            info.output = np.asarray(spikes[last]).reshape(S, graph.T, -1).tolist()
            info.output_layer = last
        return replace(report, predictions=predictions, accuracy=None, netx=info, artifact=self.path)


def prepare(
    source: Source,
    inputs: str | os.PathLike[str] | np.ndarray | None,
    how: SourceOptions,
    samples: int | None,
) -> NetxWorkload:
    """The workload of a netx file (or an artifact converted from one) on ``inputs`` (an .npy file or an array):
    spikes [S, T, *input_shape] (``drive='spikes'``), integer images [S, H, W, C] that set the input neuron's
    bias for ``how.steps`` steps (``'bias'``), or integers [S, T, *input_shape] into an SDNN input layer's Delta
    (``'graded'``); the first ``samples`` of them."""
    drive = netx_input_drive(source, how.input_drive)
    if how.input_layout not in INPUT_LAYOUTS:
        raise unknown_choice("input_layout", how.input_layout, INPUT_LAYOUTS)
    bias = drive is InputDrive.BIAS
    if inputs is None:
        raise ConfigError(
            f"{source.path} is {source.kind.what}: give its inputs with --inputs FILE.npy: spikes [S, T, *input_shape] "
            "(0/1), or with --input-drive bias --steps T integer images [S, H, W, C] for the input neuron's bias"
        )
    if bias and (how.steps is None or how.steps < 1):
        raise ConfigError(
            f"{source.path}: input_drive='bias' holds each image for a number of steps: give it with --steps T "
            "(steps=T)"
        )
    if not bias and how.steps is not None:
        raise ConfigError(
            f"{source.path}: --steps (steps=) applies to input_drive='bias' only; spike inputs [S, T, ...] give T "
            "themselves"
        )
    if how.steps is not None and not 1 <= how.steps <= MAX_T:
        raise ConfigError(f"{source.path}: steps = {how.steps}: expected 1..{MAX_T} time steps per sample (--steps)")
    shape = tuple(int(s) for s in how.input_shape) if how.input_shape else None
    if isinstance(inputs, (str, os.PathLike)):
        x = load_inputs(inputs, drive, shape, samples, how.input_layout)
    else:
        x = to_spikeport_layout(inputs, drive, how.input_layout)
        x = x[:samples] if samples else x
    where = str(inputs) if isinstance(inputs, (str, os.PathLike)) else "inputs"
    # C order: the executors hand the batch to torch, Lava ports and shared memory as it lies in memory
    return _workload(source, np.ascontiguousarray(x), drive, how.steps, shape, how.num_layers, where)


def _workload(
    source: Source,
    inputs: np.ndarray,
    drive: InputDrive,
    steps: int | None,
    input_shape: tuple[int, ...] | None,
    num_layers: int | None,
    where: str = "inputs",
) -> NetxWorkload:
    bias = drive is InputDrive.BIAS
    if inputs.ndim < (2 if bias else 3) or 0 in inputs.shape:
        raise DataError(
            f"{where}: inputs of shape {tuple(inputs.shape)}, expected "
            f"{'images [S, H, W, C]' if bias else 'a batch [S, T, *input_shape]'} (no axis of length 0)"
        )
    per_step = tuple(inputs.shape[1:] if bias else inputs.shape[2:])
    T = int(steps) if bias and steps else int(inputs.shape[1])
    if not 1 <= T <= MAX_T:
        raise DataError(
            f"{where}: inputs of {T} time steps per sample (axis 1 of {tuple(inputs.shape)}), expected 1..{MAX_T}"
        )
    declared_shape = source.declared.input_shape if source.kind.reads_layers else None
    graph = netx_graph(source, input_shape or declared_shape or per_step, T, drive, num_layers)
    if bias and len(per_step) == 1 and graph.nodes["input"].shape == (1, 1, *per_step):  # 1-D images [S, N]
        inputs, per_step = inputs.reshape(len(inputs), 1, 1, -1), (1, 1, *per_step)
    if per_step != graph.nodes["input"].shape:
        raise DataError(
            f"{where}: inputs have shape {per_step} per {'sample' if bias else 'step'} (input_drive={drive.value!r}), "
            f"{source.path} reads {graph.nodes['input'].shape} (channels-last; --input-layout reads other axis orders)"
        )
    if bias:
        check_bias_inputs(inputs, where)
    if drive is InputDrive.GRADED:
        check_graded_inputs(inputs, where)
    return NetxWorkload(source.path, graph, inputs, drive)


def class_scores(graph: Graph) -> bool:
    """Whether the last neuron layer is a vector of at least two neurons (class scores). A feature map (a
    stem-only file) or a single output neuron (PilotNet's steering) has no class to predict."""
    return sum(d > 1 for d in graph.nodes[recorded(graph)[-1]].shape) == 1


def output_predictions(graph: Graph, spikes: Spikes) -> list[int]:
    """argmax of the last neuron layer's spike counts per sample, or of its final ``v`` where it is a non-spiking
    integrator (mnist.net's output layer); [] where the last layer holds no class scores (:func:`class_scores`)."""
    if not class_scores(graph):
        return []
    last = recorded(graph)[-1]
    if v_key(last) in spikes:
        v = spikes[v_key(last)]
        preds = np.argmax(v[:, -1].reshape(len(v), -1), axis=-1)
    else:
        counts = spikes[last].reshape(len(spikes[last]), spikes[last].shape[1], -1).sum(axis=1)
        preds = np.argmax(counts, axis=-1)
    return [int(p) for p in preds]


def netx_input_drive(source: Source, asked: InputDrive | None = None) -> InputDrive:
    """The input drive to run ``source`` with: ``asked``, else the netx file's own (``GRADED`` for an SDNN input
    layer, else ``SPIKES``); an artifact converted from a netx file runs only with the drive it was made with."""
    if source.kind.reads_layers:
        return asked or source.declared.input_drive
    made_with = converted_input_drive(source.graph)
    if asked is not None and asked is not made_with:
        raise ConfigError(
            f"{source.path} was converted from a netx file with input_drive={made_with.value!r}; it cannot run with "
            f"{asked.value!r} (convert the netx file again with --input-drive {asked.value})"
        )
    return made_with


def netx_graph(
    source: Source,
    input_shape: tuple[int, ...] | None,
    T: int,
    input_drive: InputDrive,
    num_layers: int | None = None,
) -> Graph:
    """The graph of a netx file for ``T`` steps (its first ``num_layers`` layers), or of an artifact converted from
    one (its integers as written, for ``T`` steps; its input drive and layers are fixed at conversion)."""
    if source.kind.reads_layers:
        return graph_from_netx(source.path, input_shape, T=T, input_drive=input_drive, num_layers=num_layers)
    return replace(source.graph, T=T)


def run_network(
    source: Source,
    target: Target,
    options: RunOptions,
    compare: str | None,
    inputs: str | os.PathLike[str] | np.ndarray | None,
    how: SourceOptions,
    samples: int | None,
) -> RunReport:
    """A lava-dl netx file (or an artifact converted from one) on its inputs (see :func:`prepare`) on ``target``;
    the prediction is the last layer's most active neuron, ``compare="reference"`` as for any run."""
    work = prepare(source, inputs, how, samples)
    return run_graph(work.graph, RunInputs(work.inputs, artifact=source.path), target, options, compare, work.readout)


def run_netx(
    path: str | os.PathLike[str],
    inputs: np.ndarray,
    backend: str = "reference",
    *,
    input_shape: tuple[int, ...] | None = None,
    input_drive: InputDrive | str | None = None,
    steps: int | None = None,
    num_layers: int | None = None,
    batch_size: int = 64,
    progress: bool = False,
) -> RunReport:
    """A netx file (or an artifact converted from one) on ``inputs`` in spikeport's layout (see :func:`prepare`)
    on the target ``backend``, every layer recorded (``report.recording``)."""
    source = Source.open(path, "run_netx")
    drive = InputDrive.of(input_drive) if input_drive else None
    shape = tuple(input_shape) if input_shape else None
    how = SourceOptions(input_shape=shape, input_drive=drive, steps=steps, num_layers=num_layers)
    source.kind.refuse(source.path, how)
    if source.kind.inputs is not Inputs.NETX:
        raise ConfigError(f"{source.path} is {source.kind.what}: run_netx runs netx files and artifacts of one")
    options = RunOptions(batch_size=batch_size, progress=progress, record=True)
    return run_network(source, target(backend), options, None, np.asarray(inputs), how, None)
