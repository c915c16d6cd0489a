"""spikeport's version: a leaf module, so that what records it (the artifact writer, the report) need not
import the package root."""

__version__ = "0.1.0"
