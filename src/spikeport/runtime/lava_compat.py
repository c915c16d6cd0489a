"""Make lava-nc 0.10 / lava-dl 0.6 import on Python 3.11 (DESIGN.md section 8).

Upstream Lava is archived and declares Python < 3.11, numpy < 2. Two things break on 3.11:

1. ``lava.magma.compiler.var_model`` declares dataclass fields whose defaults are other dataclass
   instances. Python 3.11 rejects an unhashable default as a "mutable default". Dataclasses defined in
   ``lava.*`` modules are therefore created with ``unsafe_hash=True`` (they are never mutated after
   construction by Lava, so hashing by value is safe). Classes outside Lava are untouched.
2. ``lava.lib.dl.slayer`` imports its ``object_detection`` subpackage, which needs torchvision (not
   installable beside the CPU torch wheel here). When torchvision is absent an empty placeholder module
   is registered for it; spikeport never uses slayer's object detection.

3. (numpy >= 2.1) ``ReshapePort`` builds its transform with ``np.reshape(..., newshape=...)``, a keyword
   numpy removed; a process behind a reshaped connection then dies silently and the network hangs. The
   two transform methods are replaced by positional-shape equivalents. (Found after DESIGN.md section 8
   was written; the first two steps suffice only for networks without reshaped ports.)

All steps are applied only when needed (Python >= 3.11, resp. torchvision missing) and before the first
Lava import. Call :func:`apply` before importing anything from ``lava``; ``import_lava()`` does both.
On Python 3.10 with upstream Lava as-is, :func:`apply` changes nothing.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import sys
import types

_applied = False


def needs_dataclass_patch() -> bool:
    return sys.version_info >= (3, 11)


def needs_object_detection_placeholder() -> bool:
    return importlib.util.find_spec("torchvision") is None


def _lava_hashable_dataclass(original):
    def dataclass(cls=None, /, **kwargs):
        def wrap(c):
            if c.__module__.startswith("lava.") and not kwargs.get("frozen", False):
                kwargs.setdefault("unsafe_hash", True)
            return original(c, **kwargs)

        return wrap if cls is None else wrap(cls)

    dataclass.__wrapped__ = original
    return dataclass


def needs_reshape_port_fix() -> bool:
    import numpy as np

    major, minor = (int(x) for x in np.__version__.split(".")[:2])
    return (major, minor) >= (2, 1)


def _fix_reshape_port() -> None:
    import functools

    import numpy as np
    from lava.magma.core.process.ports.ports import ReshapePort

    ReshapePort.get_transform_func_fwd = lambda self: functools.partial(_reshape, shape=tuple(self.shape))
    ReshapePort.get_transform_func_bwd = lambda self: functools.partial(_reshape, shape=tuple(self.old_shape))


def _reshape(data, shape):
    import numpy as np

    return np.reshape(data, shape)


def apply() -> list[str]:
    """Apply the compatibility steps this interpreter needs; returns their names (for reports/tests)."""
    global _applied
    steps = []
    if needs_dataclass_patch():
        steps.append("lava-dataclasses-hashable")
    if needs_object_detection_placeholder():
        steps.append("slayer-object-detection-placeholder")
    if needs_reshape_port_fix():
        steps.append("reshape-port-numpy2")
    if _applied:
        return steps
    if "lava-dataclasses-hashable" in steps and not hasattr(dataclasses.dataclass, "__wrapped__"):
        dataclasses.dataclass = _lava_hashable_dataclass(dataclasses.dataclass)
    if "slayer-object-detection-placeholder" in steps:
        name = "lava.lib.dl.slayer.object_detection"
        sys.modules.setdefault(name, types.ModuleType(name))
    if "reshape-port-numpy2" in steps:
        try:
            _fix_reshape_port()
        except ImportError:          # a deploy environment without lava: nothing to fix
            pass
    _applied = True
    return steps
