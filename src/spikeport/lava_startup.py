"""``import lava`` in spikeport's own environment, from the user's code, with Lava's compatibility steps applied.

lava-nc 0.10 / lava-dl 0.6 need the steps of ``runtime/lava/compat.py`` on Python 3.11 and numpy 2; spikeport
applies them itself before it imports Lava, but a user's own ``from lava.lib.dl import netx`` would fail
(``ValueError: mutable default ... ByteEncoder``). ``make setup`` therefore writes a startup file into the
environment (``python -m spikeport.lava_startup --install``: a ``spikeport-lava.pth`` in site-packages) that calls
:func:`install`: a finder that waits for the first import of ``lava`` and of the three modules the steps patch, and
applies each step as its module is imported. Until Lava is imported it costs one entry in ``sys.meta_path`` and
the import of this module and spikeport's package root (about 10 ms at interpreter start; the steps, numpy and Lava
are imported with Lava).
"""

from __future__ import annotations

import importlib.machinery
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path
    from types import ModuleType

PTH_NAME = "spikeport-lava.pth"
# site.py executes a .pth line that starts with "import"; an environment whose spikeport lacks this module (or was
# uninstalled) must still start without an error at every interpreter start
PTH_LINE = (
    'import sys; exec("try:\\n from spikeport.lava_startup import install\\nexcept ImportError:\\n pass\\n'
    'else:\\n install()")\n'
)


class _PatchAfter:
    """A module's own loader, then the compatibility step for it."""

    def __init__(self, loader: Any, name: str) -> None:
        self.loader, self.name = loader, name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        from spikeport.runtime.lava import compat

        needed, fix = compat.AFTER_IMPORT[self.name]
        if needed():
            fix()


class LavaCompatFinder:
    """Applies a compatibility step as the Lava module it concerns is imported (see the module docstring). A meta
    path finder and loader by their methods alone: importlib.abc would cost every interpreter start 9 ms."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name == "lava":
            from spikeport.runtime.lava import compat

            compat.prepare_first_import()
            return None  # Lava's own finder loads it, the dataclasses now patched
        if not name.startswith("lava."):
            return None
        from spikeport.runtime.lava import compat

        if name not in compat.AFTER_IMPORT:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _PatchAfter(spec.loader, name)  # type: ignore[assignment]  # a Loader by its methods
        return spec


def install() -> None:
    """Put the finder first in ``sys.meta_path`` (once); a Lava already imported is left as it is."""
    if not any(isinstance(f, LavaCompatFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, LavaCompatFinder())


def install_startup_file(folder: str | None = None) -> Path:
    """Write ``spikeport-lava.pth`` into ``folder`` (default: this environment's site-packages)."""
    import site
    from pathlib import Path

    target = Path(folder or site.getsitepackages()[0]) / PTH_NAME
    target.write_text(PTH_LINE)
    return target


if __name__ == "__main__":
    if sys.argv[1:] != ["--install"]:
        sys.exit("usage: python -m spikeport.lava_startup --install")
    print(f"wrote {install_startup_file()}")
