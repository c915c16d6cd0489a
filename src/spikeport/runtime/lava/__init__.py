"""The Lava backend. Importing the package imports ``lowerings`` (one module per op), whose modules declare the
Lava process classes they build in ``facts.PROCESSES``: any reader of the registry sees every record (as
``ir.kernels`` imports every kernel record). Lava itself is imported only where a network is built (``compat``)."""

from spikeport.runtime.lava import lowerings as _lowerings  # noqa: F401  (fills facts.PROCESSES)
