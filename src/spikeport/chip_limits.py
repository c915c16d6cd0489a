"""Loihi 2's facts that code decides by: one leaf module (it imports nothing of spikeport), each fact once, with
where it comes from. The hardware profile (hw_profiles/loihi2.yaml) holds what prices or places a network and what a
user may change (per-core budgets, energies, systems); these are the fixed facts the lowering, the hardware plan and
the readers of measurements build on.
"""

from __future__ import annotations

# ---- Lava's Conv and the lowering ---------------------------------------------------------------------------------
# Lava's Conv models declare kernel size, padding, stride, dilation and groups as 8-bit fields (int8 in
# PyConvModelFixed; a larger value overflowed at initialise until compat widened them). The Lava lowering keeps
# every Conv within 8 bits, taking that width as the chip's ([inferred], docs/lowering.md section 6).
CONV_FIELD_MAX = 127
# The chip-native token mixing lays the tokens on a 2-D grid (the model's token grid, or a raster sequence folded
# into one) and mixes them with one Conv whose kernel spans 2 side - 1 lags along each axis (docs/lowering.md
# section 9): every grid up to this side fits Lava's 8-bit kernel field, 64 x 64 = 4,096 tokens.
CHIP_GRID_SIDE = (CONV_FIELD_MAX + 1) // 2
# The inputs one neuron reads before the lowering splits its sum into partial sums through a relay
# (docs/lowering.md section 11): Loihi 1's 4,096 axons a core (Davies et al. 2018). Below what Loihi 2's fitted
# core model holds for one neuron (runtime/loihi2/core_model.py: 6,000 kernel rows, 12,000 matrix synapses;
# tests/test_check_hw.py holds that a neuron of MAX_FAN_IN inputs fits one core), so the split is conservative.
MAX_FAN_IN = 4096
# SSA's pair neurons grow with N H d_h^2 (786,432 per layer on spikformer-4-384): past this many per chain the
# heads are split over several chains, each summed into a relay before the attention LIF, so that no neuron
# group outgrows one chip (131,072 neurons: 32 Loihi 2 cores at 4,095 neurons a core). One head past it
# (d_h >= 46 at N = 64) still makes one chain.
MAX_PAIR_NEURONS = 1 << 17

# ---- the hardware plan's host <-> chip boundary ---------------------------------------------------------------------
BIAS_MANT_BITS = 13  # Loihi 2's LIF bias mantissa: signed 13 bits (Lava's LIF docstring, lava/proc/lif/models.py)
PIXEL_MESSAGE_BITS = 16  # PyToN3ConvAdapter(num_message_bits=16) in lava-dl's PilotNet-SDNN and YOLO-KP
MAX_IO_LATENCY = 4  # steps the real adapters may add (lava-dl pilotnet_snn: "appears at the input layer at t=2")

# ---- the largest system: what no measurement of one network can exceed ------------------------------------------
# Intel, April 2024 (hw_profiles/loihi2.yaml, systems.hala_point): 1,152 Loihi 2 chips, 140,544 cores, 2.6 kW
HALA_POINT_CHIPS = 1152
HALA_POINT_CORES = 140_544
HALA_POINT_W = 2600.0
