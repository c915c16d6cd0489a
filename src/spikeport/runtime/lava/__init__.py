"""The Lava backend. Importing the package imports ``lowering``, whose lowerings declare the Lava process
classes they build in ``facts.PROCESSES``: any reader of the registry sees every record (as ``ir.kernels``
imports every kernel record). Lava itself is imported only where a network is built (``compat``)."""

from spikeport.runtime.lava import lowering as _lowering  # noqa: F401  (fills facts.PROCESSES)
