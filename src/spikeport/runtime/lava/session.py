"""Run a Lava network so that it always stops and leaves nothing behind (DESIGN.md section 5).

Lava's CPU runtime forks one OS process per ProcessModel plus one per runtime service and a
``SharedMemoryManager`` server; messages go through ``/dev/shm/psm_*`` segments. Upstream it is easy to
leave those behind or to hang forever:

* A ProcessModel that raises mid-run deadlocks the network: its consumers block in ``recv`` on its
  ports, so the runtime service never collects the step's responses and ``run()`` never returns.
* Ctrl-C reaches every process of the terminal's process group: each Lava child dies with its own
  ``KeyboardInterrupt`` traceback and ``Runtime.stop()`` then waits forever for answers.
* ``Runtime.stop()`` on an initialised but never started runtime joins children that still wait for a
  command (hangs); after a reported error it waits for an answer from a runtime service that is gone.
* A killed parent leaves orphaned children blocked on semaphores; a Lava call after ``stop()`` writes
  into unmapped shared memory (segfault).

:class:`LavaSession` avoids all of them: the parent never blocks without a deadline (runs are started
non-blocking and awaited with a timeout, with a liveness check of the children), the children ignore
SIGINT (only the parent handles Ctrl-C, then stops the network) and die with the parent
(``PR_SET_PDEATHSIG``), and :meth:`LavaSession.stop` falls back from Lava's STOP protocol to
terminating the children and shutting the shared-memory manager down (which unlinks the segments).

Usage::

    with LavaSession(net, Loihi2SimCfg(select_tag="fixed_pt")) as session:
        session.run(100)
        v = lif.v.get()
    # here: no Lava child process, no segment of this session in /dev/shm
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import gc
import multiprocessing as mp
import os
import shutil
import signal
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing import resource_tracker
from queue import Empty
from types import TracebackType
from typing import Any

from spikeport.atomic import limit_hint, signals_held
from spikeport.errors import LavaRunError, LavaStallError
from spikeport.runtime.lava import compat
from spikeport.runtime.lava.leftovers import (
    SHM_DIR,
    check_socket_folder,
    note_run_leftovers,
    remove_dead_runs,
    run_dir_prefix,
)
from spikeport.runtime.lava.progress import QUIET, StageProgress, counting_forks

# Messages a Lava channel buffers (Lava's default: 64). Every port-to-port channel is a shared-memory ring of this
# many messages, touched slot by slot as the steps go by: at 64, a 786 k-neuron port of spikformer-4-384's
# chip-native SSA held 200 MB of /dev/shm after 64 steps, 1.8 GB over the network. Under LoihiProtocol a process
# sends one message per port and step and cannot start step t + 1 before every process has received step t's, so
# one slot per channel is ever in use; 4 leave room for the management ports' command + argument messages.
CHANNEL_SLOTS = 4


@dataclass
class SessionTimings:
    compile_s: float = 0.0  # Lava compiler: process graph -> executable (in this process)
    init_s: float = 0.0  # runtime initialisation: fork children, create channels
    run_s: float = 0.0  # wall time inside run() calls
    steps: int = 0  # time steps run
    stop_s: float = 0.0


@dataclass
class Leftovers:
    children: list[int] = field(default_factory=list)  # pids of this session's Lava children still alive
    segments: list[str] = field(default_factory=list)  # this session's /dev/shm segments still present

    def __bool__(self) -> bool:
        return bool(self.children or self.segments)


# --- observation helpers (also used by the tests) ------------------------------------------------


def child_pids(pid: int | None = None) -> list[int]:
    """Live (non-zombie) child processes of ``pid`` (default: this process), read from /proc."""
    pid = os.getpid() if pid is None else pid
    out = []
    for entry in os.listdir("/proc"):
        stat = _proc_stat(int(entry)) if entry.isdigit() else None
        if stat is not None and int(stat[1]) == pid and stat[0] != "Z":
            out.append(int(entry))
    return sorted(out)


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state, ppid, ...), or None if unreadable."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()


def is_resource_tracker(pid: int) -> bool:
    """multiprocessing's resource tracker: one per interpreter, lives as long as it (not a Lava child)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"multiprocessing.resource_tracker" in f.read()
    except OSError:
        return False


def shm_segments() -> set[str]:
    try:
        return set(os.listdir(SHM_DIR))
    except OSError:  # no /dev/shm (not Linux): nothing to check
        return set()


# --- import side effect and children's signals ---------------------------------------------------


@contextlib.contextmanager
def start_method(method: str | None) -> Iterator[None]:
    """Temporarily set the global multiprocessing start method (``None`` = unset), then restore it."""
    before = mp.get_start_method(allow_none=True)
    mp.set_start_method(method, force=True)
    try:
        yield
    finally:
        mp.set_start_method(before, force=True)


_PDEATHSIG_OWNER: dict[str, int | None] = {"pid": None}


def _child_after_fork() -> None:
    # Runs in every child forked while a session starts its runtime: Lava children must not react to
    # the terminal's Ctrl-C (the parent stops them) and must die with the parent.
    if _PDEATHSIG_OWNER["pid"] is None or os.getppid() != _PDEATHSIG_OWNER["pid"]:
        return
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the CLI's handler: a child dies with its parent
    except (ValueError, OSError):
        pass
    try:
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: children may outlive a killed parent
        pass
    if os.getppid() != _PDEATHSIG_OWNER["pid"]:  # the parent died before prctl took effect
        os._exit(1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_child_after_fork)


@contextlib.contextmanager
def _forking_children() -> Iterator[None]:
    """'fork' start method and the after-fork hook while Lava creates its children.

    The garbage collector is frozen across the forks: a child's collections would otherwise walk every
    object inherited from the parent (a trained torch model, datasets) and copy their pages on write,
    which made each Lava step ~2x slower after training in the same process (``spikeport demo``).

    The children inherit a one-thread BLAS: each runs one ProcessModel, dozens run side by side, and
    OpenBLAS's default pool per child (spinning workers) made the GEMM-based CPU models 2-4x slower."""
    _PDEATHSIG_OWNER["pid"] = os.getpid()
    # collected first: what the freeze holds, unfreeze hands to the oldest generation without counting it towards
    # the next full collection, so an earlier run's garbage frozen here was never collected (12 MB a run, 50 runs
    # in one process grew by 600 MB)
    gc.collect()
    gc.freeze()
    try:
        with start_method("fork"), _single_threaded_blas():
            yield
    finally:
        gc.unfreeze()
        _PDEATHSIG_OWNER["pid"] = None


def _single_threaded_blas() -> contextlib.AbstractContextManager[Any]:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # the Python 3.10 parity environment has no threadpoolctl: only slower
        return contextlib.nullcontext()
    limits: contextlib.AbstractContextManager[Any] = threadpool_limits(limits=1, user_api="blas")  # untyped
    return limits


# --- the session ---------------------------------------------------------------------------------

# One Lava network at a time per process: starting one switches process-wide state (the multiprocessing start
# method, the at-fork hook's owner, the garbage collector's freeze, signal handlers), so two runs started from two
# threads at once could fork each other's children with the wrong setting. A second session waits for the first to
# stop (both results are correct; they take the time of two runs). Re-entrant: one thread may nest sessions.
_RUNNING = threading.RLock()


class LavaSession:
    """Compile, run and always stop one Lava network (see the module docstring).

    ``root`` is any process of the network (Lava compiles everything connected to it). ``run`` may be
    called many times; Vars can be read between runs (``proc.v.get()``). Leaving the ``with`` block, or
    :meth:`stop`, stops the network whatever happened; exceptions (KeyboardInterrupt included)
    propagate after the cleanup.
    """

    def __init__(
        self,
        root: Any,
        run_cfg: Any,
        compile_config: dict[str, Any] | None = None,
        stop_timeout_s: float = 20.0,
        check_leftovers: bool = True,
        stall_s: float = 60.0,
        progress: StageProgress = QUIET,
    ) -> None:
        self.root = root
        self.progress = progress  # reports the compile and start stages
        self.run_cfg = run_cfg
        self.compile_config = {"pypy_channel_size": CHANNEL_SLOTS, **(compile_config or {})}
        self.stop_timeout_s = stop_timeout_s  # graceful STOP deadline, then children are killed
        self.check_leftovers = check_leftovers
        self.stall_s = stall_s  # a run whose children all sit idle this long has deadlocked
        self.timings = SessionTimings()
        self.runtime: Any = None  # Lava's Runtime (untyped) once started
        self.segments: list[str] = []  # names of this session's /dev/shm segments
        self.children: list[int] = []  # pids of this session's Lava children
        self.leftovers = Leftovers()
        self.folder: str | None = None  # this session's run folder: what a SIGKILL would leave is recorded there
        self._locked = False  # holds _RUNNING from start to stop
        self._stopped = False
        self._down = False  # children joined, shared memory released

    # context manager ------------------------------------------------------------------------------
    def __enter__(self) -> LavaSession:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # with an exception already on its way, leftovers are reported without replacing it
        self._stop(raise_on_leftovers=exc_type is None)

    # lifecycle ------------------------------------------------------------------------------------
    def start(self) -> None:
        """Compile the network and start its runtime (forks the children). ``run`` calls it if needed."""
        if self._stopped:  # its shared memory is unmapped: touching Lava's ports now would segfault
            raise LavaRunError("this LavaSession was stopped; build a new network and session")
        if self.runtime is not None:
            return
        check_socket_folder()
        compat.import_lava()
        if not self._locked:
            _RUNNING.acquire()  # another thread's network runs first; released when this one has stopped
            self._locked = True
        t0 = time.perf_counter()
        try:
            with self.progress.stage("compile", "processes") as advance:
                executable = self.root.compile(self.run_cfg, self.compile_config)
                advance(len(executable.proc_builders))
        except BaseException:  # nothing started: another thread's network need not wait for a stop
            self._locked = False
            _RUNNING.release()
            raise
        self.timings.compile_s = time.perf_counter() - t0
        from lava.magma.core.process.message_interface_enum import ActorType
        from lava.magma.runtime.runtime import Runtime

        t0 = time.perf_counter()
        runtime = Runtime(executable, ActorType.MultiProcessing, loglevel=self.root._log_config.level)
        executable.assign_runtime_to_all_processes(runtime)
        self.runtime = runtime  # set before initialize: a failure half-way is still torn down
        # Ctrl-C or SIGTERM in the middle of a fork would be raised inside an at-fork callback (the logging
        # module registers some), where Python prints "Exception ignored" and swallows it: held until the forks
        # are done
        # one OS process per Python ProcessModel and runtime service, and the shared-memory manager's server
        forks = len(executable.proc_builders) + len(executable.runtime_service_builders or {}) + 1
        remove_dead_runs()  # what killed runs left: their folders, segments and multiprocessing folders
        self.folder = tempfile.mkdtemp(prefix=run_dir_prefix("lava"))
        _quiet_resource_tracker()
        with self.progress.stage("start", "OS processes", forks) as advance, counting_forks(advance):
            try:
                with signals_held(), _forking_children():
                    runtime.initialize()
            except OSError as err:  # the stop that follows (the with block) frees what was made
                raise LavaRunError(_resource_error(err, forks)) from None
        self.timings.init_s = time.perf_counter() - t0
        mi = runtime._messaging_infrastructure
        self.children = [a.pid for a in mi.actors] + _manager_pids(mi)
        self.segments = [h.name.lstrip("/") for h in mi.smm._shared_memory_handles]
        with contextlib.suppress(OSError):
            note_run_leftovers(self.folder, self.segments, _manager_folders(mi))

    def run(self, num_steps: int) -> None:
        """Run ``num_steps`` time steps; raises :class:`LavaRunError` if a ProcessModel fails."""
        from lava.magma.core.run_conditions import RunSteps

        self.start()
        rt = self.runtime
        t0 = time.perf_counter()
        with signals_held():  # one command to each runtime service, whole: a half-sent one would derail the stop
            rt.start(RunSteps(num_steps=int(num_steps), blocking=False))
        self._await_run()
        self.timings.run_s += time.perf_counter() - t0
        self.timings.steps += int(num_steps)

    def _await_run(self) -> None:
        # Lava's blocking wait has no deadline: a dead or deadlocked child hangs it forever. Here the
        # parent waits on the response queue with a timeout (no added latency when the answer comes)
        # and checks the children in between.
        from lava.magma.runtime.mgmt_token_enums import MGMT_RESPONSE, enum_equal

        rt = self.runtime
        dead_since = None
        stall = _StallClock(self.children, self.stall_s)
        while True:
            pending = [p for p in rt.service_to_runtime if not p.probe()]
            if not pending:
                if any(enum_equal(p.peek(), MGMT_RESPONSE.ERROR) for p in rt.service_to_runtime):
                    self._fail("a ProcessModel raised")
                with signals_held():  # every service's answer read, or none
                    rt.wait()
                return
            if _wait_for_data(pending[0], timeout_s=0.05):
                continue
            dead = [a for a in rt._messaging_infrastructure.actors if not a.is_alive()]
            if dead:
                dead_since = dead_since or time.monotonic()
                if time.monotonic() - dead_since > 1.0:  # no ERROR came: the network is deadlocked
                    self._fail(f"{len(dead)} Lava process(es) exited mid-run")
            if stall.stalled():
                self._fail(f"no Lava process used any CPU for {self.stall_s:g} s", LavaStallError)

    def _fail(self, what: str, error: type[LavaRunError] = LavaRunError) -> None:
        details = self._child_errors()
        self._force_teardown()
        raise error(f"Lava run failed, network torn down: {what}" + (f"; {details}" if details else ""))

    def _child_errors(self) -> str:
        # Actors are created in proc_builders order (Py models only), then the runtime services.
        from lava.magma.compiler.builders.py_builder import PyProcessBuilder

        procs = [(p, b) for p, b in self.runtime._executable.proc_builders.items() if isinstance(b, PyProcessBuilder)]
        found = []
        for i, actor in enumerate(self.runtime._messaging_infrastructure.actors):
            try:
                err = actor.exception if not actor.is_alive() else None
            except Exception:  # noqa: BLE001 - an unpicklable child exception must not stop the teardown
                err = None
            if err:
                who = (
                    f"process '{procs[i][0].name}' ({procs[i][1].proc_model.__name__})"
                    if i < len(procs)
                    else "runtime service"
                )
                found.append(f"{who}: {type(err[0]).__name__}: {err[0]}")
        return "; ".join(found)

    def stop(self) -> None:
        """Stop the network (idempotent). Graceful STOP first; on timeout, error or a second Ctrl-C the
        children are terminated and the shared memory released. Raises if anything was left behind."""
        self._stop(raise_on_leftovers=True)

    def _stop(self, raise_on_leftovers: bool) -> None:
        try:
            self._stop_network(raise_on_leftovers)
        finally:
            if self._locked:
                self._locked = False
                _RUNNING.release()

    def _stop_network(self, raise_on_leftovers: bool) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self.runtime is None:
            return
        t0 = time.perf_counter()
        # A signal raised in the middle of the teardown would leave it half done (children alive, segments in
        # /dev/shm): noted and raised once the network is down. A second Ctrl-C during the graceful stop hurries it.
        with signals_held() as caught:
            try:
                if not self._down:
                    self._graceful_stop(caught)
            except BaseException:
                if not self._down:
                    self._force_teardown()
                raise
            finally:
                self.timings.stop_s = time.perf_counter() - t0
                self.leftovers = self.find_leftovers()
        if self.leftovers and self.check_leftovers:
            message = f"Lava left {self.leftovers} behind after stop"
            if raise_on_leftovers:
                raise LavaRunError(message)
            warnings.warn(message, RuntimeWarning, stacklevel=3)

    def _graceful_stop(self, hurry: list[int]) -> None:
        from lava.magma.runtime.mgmt_token_enums import MGMT_COMMAND, MGMT_RESPONSE, enum_equal

        rt = self.runtime
        mi = rt._messaging_infrastructure
        if mi is None or not mi.actors or not all(a.is_alive() for a in mi.actors):
            self._force_teardown()
            return
        services = mi.actors[len(mi.actors) - len(rt._executable.runtime_service_builders or {}) :]
        for port in rt.runtime_to_service:
            port.send(MGMT_COMMAND.STOP)
        deadline = time.monotonic() + self.stop_timeout_s
        for port in rt.service_to_runtime:
            while True:  # a run that was interrupted may answer DONE/REQ_* before TERMINATED
                if port.probe():
                    if enum_equal(port.recv(), MGMT_RESPONSE.TERMINATED):
                        break
                    continue
                if hurry or time.monotonic() > deadline or not all(a.is_alive() for a in services):
                    self._force_teardown()
                    return
                _wait_for_data(port, timeout_s=0.05)
        rt.join()
        self._finish(grace_s=self.stop_timeout_s)

    def _force_teardown(self) -> None:
        rt = self.runtime
        mi = getattr(rt, "_messaging_infrastructure", None)
        for actor in list(getattr(mi, "actors", [])):
            if actor.is_alive():
                actor.terminate()
        self._finish(grace_s=2.0)

    def _finish(self, grace_s: float) -> None:
        # Join the children with a deadline (Lava's own join has none), kill stragglers, then shut the
        # shared-memory manager down: its server unlinks every segment it handed out.
        rt = self.runtime
        mi = getattr(rt, "_messaging_infrastructure", None)
        actors = list(getattr(mi, "actors", []))
        if mi is not None and not self.children:  # initialize() was interrupted half-way
            self.children = [a.pid for a in actors if a.pid] + _manager_pids(mi)
            smm = mi.smm
            self.segments = [h.name.lstrip("/") for h in (smm._shared_memory_handles if smm else [])]
        deadline = time.monotonic() + grace_s
        for actor in actors:
            mp.Process.join(actor, max(0.0, deadline - time.monotonic()))
        for actor in actors:
            if actor.is_alive():
                actor.kill()
                mp.Process.join(actor, 5.0)
        for port in list(getattr(rt, "_open_ports", [])):
            port.join()
        rt._open_ports.clear()
        folders = _manager_folders(mi) if mi is not None else []
        if mi is not None:
            for actor in actors:
                actor.join()  # SystemProcess.join: collects the child's exception, closes pipes
            if mi.smm is not None:
                mi.smm.shutdown()
        # the manager unlinks the segments it tracks and removes its folder; one that could not (killed, a
        # segment created as it failed) leaves them to this process, which made them
        _unlink_segments(self.segments)
        own = mp.current_process()._config.get("tempdir")  # type: ignore[attr-defined]  # this process's: kept
        for folder in folders:
            if folder != own:
                shutil.rmtree(folder, ignore_errors=True)
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
        compat.drop_repeated_log_handlers()
        wd = getattr(rt, "_watchdog_manager", None)
        if wd is not None:
            wd.stop()
        rt._is_running = rt._is_started = False
        self._down = True

    def find_leftovers(self) -> Leftovers:
        alive = set(child_pids())
        present = shm_segments()
        return Leftovers(
            children=[p for p in self.children if p in alive], segments=[s for s in self.segments if s in present]
        )


class _StallClock:
    """Whether a set of processes has used no CPU time at all for ``stall_s`` (Linux /proc; never elsewhere).

    Sampled every few seconds: a deadlocked Lava network sits in semaphore waits and burns nothing, while a
    slow but live one always shows some CPU time."""

    def __init__(self, pids: list[int], stall_s: float, every_s: float | None = None):
        self.pids, self.stall_s = pids, stall_s
        self.every_s = min(5.0, stall_s / 4) if every_s is None else every_s
        self.cpu, self.since = _cpu_ticks(pids), time.monotonic()
        self.checked = self.since

    def stalled(self) -> bool:
        now = time.monotonic()
        if self.cpu is None or now - self.checked < self.every_s:
            return False
        self.checked = now
        cpu = _cpu_ticks(self.pids)
        if cpu != self.cpu:
            self.cpu, self.since = cpu, now
        return now - self.since > self.stall_s


def _cpu_ticks(pids: list[int]) -> int | None:
    """utime + stime of ``pids`` in clock ticks (a process that has gone counts 0; None without /proc)."""
    if not os.path.isdir("/proc"):
        return None
    stats = [_proc_stat(pid) for pid in pids]
    return sum(int(st[11]) + int(st[12]) for st in stats if st is not None)  # stat fields 14, 15


def _wait_for_data(port: Any, timeout_s: float) -> bool:
    """Block until a CspRecvPort holds a message (not consuming it) or the timeout passes."""
    try:
        port._queue.get(timeout=timeout_s, peek=True)
        return True
    except Empty:
        return False


def _resource_error(err: OSError, forks: int) -> str:
    """The one line for a system resource that Lava's start ran out of: shared memory in /dev/shm (each channel is
    a segment, mapped through one more file descriptor) or processes."""
    code, reason = err.errno, err.strerror or str(err)
    where = f" ({err.filename})" if err.filename else ""
    if code in (errno.EFBIG, errno.ENOSPC, errno.ENOMEM, errno.EMFILE, errno.ENFILE):
        what = {errno.ENOSPC: f"{SHM_DIR} is full", errno.ENOMEM: f"{SHM_DIR} or memory is full"}.get(code, reason)
        return (
            f"Lava could not create its shared memory in {SHM_DIR}{where} for a network of {forks} processes: "
            f"{what}{limit_hint(code)}"
        )
    if code == errno.EAGAIN:
        return f"Lava could not start its {forks} processes: {reason} (the process limit, `ulimit -u`, or memory)"
    return f"Lava could not start its network of {forks} processes{where}: {reason}{limit_hint(code)}"


def _quiet_resource_tracker() -> None:
    """Start multiprocessing's resource tracker, once per interpreter, with its stderr on /dev/null. It inherits
    this process's stderr and prints there: a traceback (a KeyError) when a segment fails half-made under a limit of
    the system, warnings about segments it unlinks after a killed run. The session reports and removes its own
    leftovers instead. Where one already runs, or the file descriptors cannot be had, it is left as it is."""
    tracker = resource_tracker._resource_tracker
    if getattr(tracker, "_fd", None) is not None:
        return
    try:
        saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        os.dup2(devnull, 2)
        tracker.ensure_running()
    except OSError:
        pass
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _unlink_segments(names: list[str]) -> None:
    """Unlink those of ``names`` still in /dev/shm, and tell the resource tracker (which would try again at exit)."""
    for name in names:
        try:
            os.unlink(os.path.join(SHM_DIR, name))
        except OSError:
            continue
        with contextlib.suppress(Exception):
            resource_tracker.unregister(f"/{name}", "shared_memory")


def _manager_folders(mi: Any) -> list[str]:
    """The ``pymp-*`` folder of the shared-memory manager's socket (it removes it when it exits normally; killed,
    it cannot)."""
    address = getattr(getattr(getattr(mi, "smm", None), "_manager", None), "_address", None)
    if not isinstance(address, str) or not os.path.basename(os.path.dirname(address)).startswith("pymp-"):
        return []
    return [os.path.dirname(address)]


def _manager_pids(mi: Any) -> list[int]:
    proc = getattr(getattr(mi.smm, "_manager", None), "_process", None)
    return [proc.pid] if proc is not None and proc.pid else []
