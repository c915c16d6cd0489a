"""The report's gathering stage: run reports in, ``report.inputs.ReportInputs`` out.

Everything a report needs that is read from a file, run through a tool or timed happens here, so that
``spikeport.report`` only turns records into the summary and prints it: ``stage`` (loads the run reports and
the profiles, calls the others, writes the summary's files), ``models`` (the model config a run report names,
checked against its layers), ``chip`` (check-hw on the artifact that ran), ``cpu`` (ONNX Runtime on this CPU),
``gpu`` (the GPU baseline: a bench file, CUDA here, or an estimate from a GPU profile) and ``memory`` (the
analytic breakdown, the torch model's measured peak, the paper's state claim priced).
"""
