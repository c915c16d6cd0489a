"""NIR in: a NIR graph (snnTorch, Norse, Sinabs, Rockpool, lava-dl, spikeport's own export) -> a spikeport artifact.

==================  ==========================================================================================
``graphs.py``       a .nir file read and flattened: nested sub-graphs inlined, nodes in topological order
``neurons.py``      NIR's continuous neurons (LIF, CubaLIF, IF, Threshold) -> Loihi 2 decays and thresholds
``primitives.py``   one mapper per NIR primitive (``PRIMITIVES``) -> spikeport IR nodes (``graph_from_nir``)
``simulate.py``     the mapped network in float (NIR's Euler step, exact decays): calibration and comparison
``samples.py``      the samples a conversion is given (.npy, NIR's torch layout) in spikeport's layout
``to_artifact.py``  the whole import: map, calibrate, quantize, compare, write (``spikeport convert GRAPH.nir``)
==================  ==========================================================================================

The netx package is the model: a reader maps an external graph onto spikeport's IR ops, then the normal
quantization path makes the integers. Unlike netx files, a NIR graph holds floats and continuous-time constants, so
the import calibrates its fixed-point scales on the samples given and compares float, fake-quant and the integer
reference on them. It sits beside ``exports`` (above ``convert``: the fake-quant executor is torch); reading and
mapping need only numpy and ``nir``. docs/nir.md has the primitive table.
"""
