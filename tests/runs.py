"""Short forms for tests that compare recordings: (the run report as its JSON object, the recorded spikes)."""

from __future__ import annotations

from spikeport.runtime.targets import run_recorded


def reference_spikes(graph, x, batch_size: int = 64):
    report = run_recorded(graph, x, batch_size=batch_size)
    return report.to_dict(), report.recording


def lava_spikes(graph, x, labels=None, **kwargs):
    from spikeport.runtime.lava.run import run_lava

    report = run_lava(graph, x, labels, **kwargs)
    return report.to_dict(), report.recording


def netx_spikes(path, x, backend: str = "reference", **kwargs):
    from spikeport.runtime.netx_run import run_netx

    report = run_netx(path, x, backend, **kwargs)
    return report.to_dict(), report.recording
