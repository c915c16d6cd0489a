"""spikeport.api.lava_network: an artifact's Lava network in the user's own Lava program, as the README shows it
(a RingBuffer into its input, a sink on its output, the user's own run call), predicting as the reference does."""

import pytest

from conftest import quantized_graph, random_images, spiky_model

pytestmark = pytest.mark.lava


def test_readme_embedding_example_runs_and_predicts_as_the_reference(tmp_path):
    from spikeport import api
    from spikeport.ir import artifact
    from spikeport.runtime.sim.reference import ReferenceSimulator

    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))
    path = artifact.write(graph, tmp_path / "m.spk.h5")
    images = random_images(3, seed=5).numpy().transpose(0, 2, 3, 1)  # [S, H, W, C], as the data set gives them

    from spikeport import lava_startup

    lava_startup.install()  # what make setup's spikeport-lava.pth does at every start of the venv's python
    # --- the README's example ---
    from lava.magma.core.run_conditions import RunSteps
    from lava.proc.io.sink import RingBuffer as Sink
    from lava.proc.io.source import RingBuffer

    net = api.lava_network(path)
    source = RingBuffer(data=net.pixels(images))
    source.s_out.connect(net.input)
    steps = net.steps(len(images))
    sinks = {}
    for name, port in net.outputs.items():
        sinks[name] = Sink(shape=port.shape, buffer=steps)
        port.connect(sinks[name].a_in)
    source.run(condition=RunSteps(num_steps=steps), run_cfg=net.run_config)
    data = {name: sink.data.get() for name, sink in sinks.items()}
    source.stop()
    predictions = net.predict(data, len(images))
    # ---

    assert list(predictions) == ReferenceSimulator(graph).run(images).predictions
    assert list(net.outputs) == ["head.token_sum"] and net.per_sample("head.token_sum", data["head.token_sum"], 3).any()
