"""The terms the report's figures are named by, one definition each: the page lists them under its tables, and
docs/glossary.md holds the same sentences (tests/test_report_glossary.py checks that they agree word for word)."""

from __future__ import annotations

TERMS: dict[str, str] = {
    "inference": "one sample through all T time steps; every figure of the report is per inference unless it names "
    "a batch",
    "model": "one artifact (one conversion), named by its attention variant; the runs of the same artifact (same root "
    "digest) are merged into one column",
    "run": "one run report: one executor on some samples of one artifact",
    "counts of a model": "the op counts of the model's run over the most samples, among the reference and the runs "
    "bit-exact with it; they price the model's energy (another run's own figure averages other samples)",
    "bit-exact": "identical spikes in every layer at every time step, and identical predictions, on the samples both "
    "ran (`spikeport run --compare reference`); a hardware-plan run compares its outputs with the reference's",
    "cores, chips": "check-hw's placement of the network: the neuromorphic cores Lava's Loihi 2 compiler would cut "
    "it into (its core model, fitted to the compiler's public compile tables: PilotNet-LIF 74 cores, PilotNet-SDNN "
    "61, MNIST 5, YOLO-KP 574 reproduced; a range where a neuron model no table covers is extrapolated) and the "
    "chips that hold them (Loihi 2: 128 cores a chip); `chips: 1 of 128 cores` reads one chip, of 128 cores each",
    "synaptic memory": "check-hw's bytes of the weights stored on the chip at the chip's weight precision (delay "
    "bits added where a group delays; a Conv's kernel once): the data, not the cores' SynMem units",
    "chip state": "check-hw's bytes of every state variable the Lava processes keep between time steps on the "
    "neuromorphic cores (LIF u and v, and the neurons of the chip-native attention), at their bit widths",
    "host state": "the same, for the processes check-hw places on the host",
    "model state": "the state the model's equations hold between time steps, counted by the executor at Loihi "
    "precision: LIF state + attention state (+ other); smaller than chip state, which counts every Lava variable",
    "LIF state": "the LIF neurons' u and v at 24 bits each (6 B per neuron), counted by the executor",
    "attention state": "what the attention holds between time steps in the lowering that ran, counted by the "
    "executor: K^T V in a host process (SSA past 64 tokens), X in a dendritic process; 0 B for the chip-native "
    "lowerings",
    "streaming attention state": "what a runtime streaming tokens one at a time would hold (the papers' O(d^2) vs "
    "O(kd) claim): SSA's K^T V (16 bits) or LRF-Dyn's X (24 bits) per layer; the lowering spikeport builds holds none",
    "dynamic energy": "op counts x the profile's per-op energies (a measurement: its total less static)",
    "static energy": "static power x the time an inference holds the chips: power per chip x chips x time steps x "
    "time per step",
    "static included": "the report's accounting when the chip profile has static power: the chip's figure is dynamic "
    "+ static, and the GPU's is the board's energy, which holds its idle power; otherwise static power is on neither "
    "side (the GPU's energy less idle power)",
    "per-op energies": "a profile's energy per counted event (synop, neuron update, ...), with its source; loihi2's "
    "are Loihi 1's (Davies et al. 2018) unless the profile was calibrated (`spikeport calibrate`)",
    "estimated": "worked out from counts and a cost table (or a roofline), never run on that hardware",
    "measured": "read from a meter or a clock on the hardware named",
    "latency mode": "the GPU (or this CPU) running one inference as it arrives: batch 1",
    "throughput mode": "the GPU (or this CPU) serving many: a batch of 256, its energy and time divided per inference",
    "GPU estimate range": "a GPU estimate's energy lies between idle power x time and TDP x time; the report takes TDP "
    "x time and names the range",
    "GPU / chip": "the GPU's energy per inference over the chip's, in the same accounting and the mode named",
    "time a call": "one call of the network at the mode's batch",
    "cmos45nm": "the same op counts at 45 nm CMOS arithmetic (Horowitz 2014) with no memory: the floor of a digital "
    "accelerator, not a chip",
}
