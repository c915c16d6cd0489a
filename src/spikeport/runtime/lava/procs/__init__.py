"""spikeport's own Lava Processes and ProcessModels. A folder of their own: Lava's compiler imports every
module beside a Process's file when it searches for ProcessModels."""
