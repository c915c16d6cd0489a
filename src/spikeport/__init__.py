"""spikeport: spiking transformers from PyTorch training to Intel Lava / Loihi 2.

The Python API mirrors the CLI. Submodules are imported lazily so that a deploy-only install
(numpy + h5py + lava) never imports torch: ``spikeport.runtime`` and ``spikeport.ir`` stay torch-free.
"""
__version__ = "0.1.0"
