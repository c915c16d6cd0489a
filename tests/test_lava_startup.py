"""`import lava` from the user's own code in spikeport's environment: the startup file `make setup` writes applies
Lava's compatibility steps as Lava's modules are imported (spikeport/lava_startup.py)."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.lava

USER_CODE = (
    "from lava.lib.dl import netx; "
    "from lava.proc.conv.models import AbstractPyConvModel; "
    "from lava.magma.core.process.ports.ports import ReshapePort; "
    "print(netx.hdf5.Network.create_input.__spikeport_fixed__, AbstractPyConvModel.kernel_size.precision)"
)


def python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Lava imports as it is on Python 3.10")
def test_user_imports_lava_dl_netx_through_the_startup_finder(tmp_path):
    from spikeport import lava_startup

    pth = lava_startup.install_startup_file(str(tmp_path))
    assert pth.read_text() == lava_startup.PTH_LINE
    # the .pth line itself, executed as site.py executes it, then the user's imports
    done = python("-c", pth.read_text().strip() + "; " + USER_CODE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "32"]
    # without it, the user's import fails as issue 36 found (the step is needed, so the test proves the finder)
    plain = python("-S", "-c", f"import sys; sys.path[:0] = {sys.path!r}; from lava.lib.dl import netx")
    assert plain.returncode != 0 and "mutable default" in plain.stderr


def test_the_finder_imports_nothing_until_lava_is_imported():
    done = python("-c", "import sys, spikeport.lava_startup as s; s.install(); print('numpy' in sys.modules)")
    assert done.returncode == 0 and done.stdout.strip() == "False"
