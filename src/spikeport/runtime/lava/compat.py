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

4. (numpy >= 2) Lava's CPU Conv models declare ``kernel_size``, ``stride``, ``padding``, ``dilation`` and
   ``groups`` as int8 Vars. numpy 2 refuses to cast a value above 127 into them ("OverflowError: Python
   integer 200 out of bounds for int8", PilotNet's netx file); numpy 1 wrapped it silently into a wrong
   geometry. The five types are widened to int32 (their values are shapes, never arithmetic state).
   spikeport's own lowering still keeps these fields <= 127 (``chip_limits.CONV_FIELD_MAX``): the 8-bit width
   is taken as the chip's, [inferred].

5. (numpy >= 2) lava-dl netx's ``Network.create_input`` reads an input layer's ``weight`` / ``bias`` (its stored
   transform) with ``int(layer_config['weight'])``. slayer writes them as one-element arrays, which numpy 2
   refuses to convert ("only 0-dimensional arrays can be converted to Python scalars"): lava-dl's own
   ``test_mnist`` fails on mnist.net. ``create_input`` is given the layer with those two read as scalars. This
   step is applied by :func:`netx_network` (importing lava-dl's netx imports torch: 2 s that Lava runs of
   spikeport artifacts do not need), which spikeport's netx runners use instead of importing ``Network``.

All steps are applied only when needed (Python >= 3.11 / lava-dl installed without torchvision / numpy >=
2.1) and before the first Lava import. :func:`import_lava` is the one entry point: call it before
importing anything from ``lava``. On Python 3.10 with upstream Lava (numpy < 2, no lava-dl) it applies no
step and changes nothing in Lava.

Besides the steps, :func:`import_lava` contains one import side effect on every Python version (it is not
a compatibility step and is not listed): ``lava.magma.runtime.message_infrastructure.multiprocessing``
calls ``multiprocessing.set_start_method('fork')`` at import, unforced. That raises "context has already
been set" when the caller chose a start method before (torch users often pick 'spawn'), and makes every
later unforced ``set_start_method`` of the caller raise. The module is therefore imported here with the
start method unset, and the caller's setting (or its absence) is restored right after. Lava then uses
the platform default ('fork' on Linux up to Python 3.13); ``session.LavaSession`` forces 'fork'
only while it creates Lava's children.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
import importlib.util
import logging
import multiprocessing as mp
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from spikeport.errors import BackendUnavailableError

_applied = False
LAVA_MP_MODULE = "lava.magma.runtime.message_infrastructure.multiprocessing"


def installed(distribution: str) -> bool:
    """Is a distribution installed? (metadata only: nothing is imported)"""
    try:
        importlib.metadata.version(distribution)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def needs_dataclass_patch() -> bool:
    return sys.version_info >= (3, 11)


def needs_object_detection_placeholder() -> bool:
    # Only lava-dl's slayer imports object_detection; the 3.10 target installs lava-nc alone.
    return installed("lava-dl") and importlib.util.find_spec("torchvision") is None


def _lava_hashable_dataclass(original: Callable[..., Any]) -> Callable[..., Any]:
    def dataclass(cls: type | None = None, /, **kwargs: Any) -> Any:
        def wrap(c: type) -> Any:
            if c.__module__.startswith("lava.") and not kwargs.get("frozen", False):
                kwargs.setdefault("unsafe_hash", True)
            return original(c, **kwargs)

        return wrap if cls is None else wrap(cls)

    dataclass.__wrapped__ = original  # type: ignore[attr-defined]  # marks the patch as applied
    return dataclass


def needs_reshape_port_fix() -> bool:
    major, minor = (int(x) for x in np.__version__.split(".")[:2])
    return (major, minor) >= (2, 1) and installed("lava-nc")


def _fix_reshape_port() -> None:

    from lava.magma.core.process.ports.ports import ReshapePort

    ReshapePort.get_transform_func_fwd = lambda self: functools.partial(_reshape, shape=tuple(self.shape))
    ReshapePort.get_transform_func_bwd = lambda self: functools.partial(_reshape, shape=tuple(self.old_shape))


def _reshape(data: Any, shape: tuple[int, ...]) -> Any:
    return np.reshape(data, shape)


CONV_GEOMETRY_VARS = ("kernel_size", "stride", "padding", "dilation", "groups")


def needs_conv_fields_fix() -> bool:
    return int(np.__version__.split(".")[0]) >= 2 and installed("lava-nc")


def _widen_conv_fields() -> None:
    from lava.magma.core.model.py.type import LavaPyType
    from lava.proc.conv.models import AbstractPyConvModel

    for name in CONV_GEOMETRY_VARS:
        setattr(AbstractPyConvModel, name, LavaPyType(np.ndarray, np.int32, precision=32))


def needs_netx_input_fix() -> bool:
    return int(np.__version__.split(".")[0]) >= 2 and installed("lava-dl")


class _ScalarTransform:
    """An h5py layer group whose ``weight`` / ``bias`` read as scalars (numpy 2 refuses ``int`` of a 1-D array)."""

    def __init__(self, group: Any) -> None:
        self.group = group

    def keys(self) -> Any:
        return self.group.keys()

    def __contains__(self, key: str) -> bool:
        return key in self.group

    def __getitem__(self, key: str) -> Any:
        value = self.group[key]
        return np.ravel(value[()])[0] if key in ("weight", "bias") else value


def _fix_netx_input_transform() -> None:
    from lava.lib.dl.netx.hdf5 import Network

    original = Network.create_input
    if getattr(original, "__spikeport_fixed__", False):
        return

    def create_input(layer_config: Any, *args: Any, **kwargs: Any) -> Any:
        return original(_ScalarTransform(layer_config), *args, **kwargs)

    create_input.__spikeport_fixed__ = True  # type: ignore[attr-defined]
    Network.create_input = staticmethod(create_input)


def netx_network() -> Any:
    """lava-dl's ``netx.hdf5.Network`` class with step 5 applied where numpy needs it (imports Lava first)."""
    steps = import_lava()
    from lava.lib.dl.netx.hdf5 import Network

    if "netx-input-transform-numpy2" in steps:
        _fix_netx_input_transform()
    return Network


def import_lava() -> list[str]:
    """Make Lava importable here: apply the compatibility steps this interpreter needs (once), import Lava's
    multiprocessing module with its start-method side effect contained, then Lava's run configurations.
    Returns the names of the steps (for reports and tests; [] on Python 3.10 with upstream Lava).
    Raises BackendUnavailableError when lava-nc is not importable."""
    steps = _apply()
    try:
        import lava.magma.core.run_configs  # noqa: F401
    except ImportError as err:  # pragma: no cover - lava is a required dependency of the main env
        raise BackendUnavailableError(f"lava-nc is not importable ({err}); install lava-nc==0.10.0") from None
    return steps


def prepare_first_import() -> None:
    """The steps that must come before Lava's first import (the dataclass wrapper, the slayer placeholder), for a
    Lava import the user makes (``spikeport.lava_startup``); the rest follow the modules they fix
    (:data:`AFTER_IMPORT`)."""
    if needs_dataclass_patch() and not hasattr(dataclasses.dataclass, "__wrapped__"):
        dataclasses.dataclass = _lava_hashable_dataclass(dataclasses.dataclass)
    if needs_object_detection_placeholder():
        name = "lava.lib.dl.slayer.object_detection"
        sys.modules.setdefault(name, types.ModuleType(name))


# the steps that patch a Lava module once it is imported: (its name, whether this interpreter needs it, the fix)
AFTER_IMPORT: dict[str, tuple[Callable[[], bool], Callable[[], None]]] = {
    "lava.magma.core.process.ports.ports": (needs_reshape_port_fix, _fix_reshape_port),
    "lava.proc.conv.models": (needs_conv_fields_fix, _widen_conv_fields),
    "lava.lib.dl.netx.hdf5": (needs_netx_input_fix, _fix_netx_input_transform),
}


def _apply() -> list[str]:
    """Apply the compatibility steps this interpreter needs; returns their names."""
    global _applied
    steps = []
    if needs_dataclass_patch():
        steps.append("lava-dataclasses-hashable")
    if needs_object_detection_placeholder():
        steps.append("slayer-object-detection-placeholder")
    if needs_reshape_port_fix():
        steps.append("reshape-port-numpy2")
    if needs_conv_fields_fix():
        steps.append("conv-fields-numpy2")
    if needs_netx_input_fix():
        steps.append("netx-input-transform-numpy2")
    if _applied:
        return steps
    if "lava-dataclasses-hashable" in steps and not hasattr(dataclasses.dataclass, "__wrapped__"):
        dataclasses.dataclass = _lava_hashable_dataclass(dataclasses.dataclass)
    if "slayer-object-detection-placeholder" in steps:
        name = "lava.lib.dl.slayer.object_detection"
        sys.modules.setdefault(name, types.ModuleType(name))
    _import_lava_multiprocessing_contained()
    for step, fix in (("reshape-port-numpy2", _fix_reshape_port), ("conv-fields-numpy2", _widen_conv_fields)):
        if step in steps:
            try:
                fix()
            except ImportError:  # a deploy environment without lava: nothing to fix
                pass
    _applied = True
    return steps


def _import_lava_multiprocessing_contained() -> bool:
    """Import Lava's multiprocessing module without letting it fix the global start method (see the
    module docstring). Returns True if it imported it now; no-op without lava-nc or if already imported."""
    if LAVA_MP_MODULE in sys.modules or not installed("lava-nc"):
        return False

    before = mp.get_start_method(allow_none=True)
    mp.set_start_method(None, force=True)  # unset: Lava's unforced set_start_method('fork') succeeds
    try:
        importlib.import_module(LAVA_MP_MODULE)
    finally:
        mp.set_start_method(before, force=True)  # the caller's choice, or unset again
    return True


def drop_repeated_log_handlers() -> int:
    """Lava adds a console handler to the root logger for every Process it creates (``AbstractProcess.__init__``)
    and to its compiler's logger for every compilation, and never removes one: after 50 runs of a 64-process
    network in one interpreter the root logger held 3 200 handlers, each printing every later log record of any
    library once more. Keeps the first of Lava's handlers on each logger and drops the others; returns how many.
    Lava's handlers are told by their class and format (``LogConfig``), so a handler of the user's is kept."""
    from lava.magma.core.process.process import LogConfig

    lava_format = LogConfig.format
    dropped = 0
    for logger in (logging.getLogger(), logging.getLogger("lava.magma.compiler.compiler")):
        seen = False
        for handler in list(logger.handlers):
            fmt = getattr(handler.formatter, "_fmt", None) if handler.formatter else None
            lava = type(handler) is logging.StreamHandler and fmt in (lava_format, None)
            if lava and seen:
                logger.removeHandler(handler)
                dropped += 1
            seen = seen or lava
    return dropped
