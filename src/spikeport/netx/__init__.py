"""lava-dl netx interop in one package: the netx format as lava-dl 0.6 reads and writes it (docs/netx.md).

=================  ===========================================================================================
``schema.py``      every field netx reads, typed and bounded: checked before anything is read
``read.py``        a netx file -> a spikeport Graph (``graph_from_netx``: the input node, the synapses, the order)
``neurons.py``     ``NEURONS``: one reader per netx neuron type (CUBA, SDNN, RF), the SDNN input's Delta encoder
``weights.py``     the weights lava-dl's netx and Lava really apply, in spikeport's weight format
``blocks.py``      one lava-dl block as a one-layer netx file (lava-dl's block ground truth)
``inputs.py``      what feeds a netx network: the .npy files and axis layouts users hand in
``write.py``       the netx-expressible chain of an artifact -> a netx file (``NETX``: one mapping per op)
``to_artifact.py`` a netx file -> a spikeport artifact (``spikeport convert net.net``)
``drive.py``       ``InputDrive``: what feeds the network (spikes, the input neuron's bias, graded integers)
=================  ===========================================================================================

The package sits just above ``ir`` and below the runtimes (numpy + h5py only, no torch, no Lava): a deploy-only
install reads, writes and converts netx files. Running them on a Target is ``runtime/netx_run.py``; lava-dl's own
netx Network, the parity target, is ``runtime/lava/lavadl.py``. Nothing is imported here, so ``drive.py`` (the
standard library only) stays as light as ``import spikeport.api`` needs it.
"""
