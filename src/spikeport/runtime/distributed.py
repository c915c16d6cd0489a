"""Sharded runs: ``torchrun --nproc_per_node N -m spikeport run ARTIFACT`` splits the samples over N processes.

Under torchrun (``WORLD_SIZE`` > 1, with ``RANK`` and ``LOCAL_RANK``) ``runtime.targets.run_graph`` hands the run
to :func:`run_sharded`: each rank runs its contiguous share of the samples through the normal target (on
``cuda:LOCAL_RANK`` where a CUDA device was asked for), and the ranks' run reports, with their recordings when the
run records, are gathered on rank 0, which merges them in rank order (``RunReport.merge``,
``runtime.recording.concat``): field for field the report of one process running every sample, wall time aside
(the longest shard's). Rank 0 then finishes the run as one process would (a netx file's readout reads the merged
recording) and sends the result to every rank, so each returns the whole run's report (the recording stays on rank
0); only rank 0 shows progress, and the CLI prints and writes on rank 0 only.

A rank that raises does not leave: it sends its error to the gather instead of a report, so that rank 0 sees every
rank's outcome at once and every rank raises one ``RankError`` naming the failed ranks and their causes; nothing
is written. It also flags its failure in the job's key-value store, and the other ranks stop their shards within a
second or two (``_Watch``: as Ctrl-C stops them, so a Lava network is stopped and leaves nothing behind) instead of
running them to the end first. A rank that dies ends the job through torchrun, which stops the others; one that
hangs, through the process group's timeout (``TIMEOUT`` after rank 0 has finished its own shard).

The lava and loihi2 targets shard too: each rank builds and streams its own Lava network (its own process tree; its
run folder carries its pid, and multiprocessing names each shared-memory segment at random and creates it only
where the name is free, so ranks on one machine cannot collide), and ``runtime.merge`` merges their records of the
network with the reports.

The process group is gloo on the CPU; with CUDA devices, NCCL for device tensors and gloo for the host objects
gathered here (``cpu:gloo,cuda:nccl``). torch is imported only when a run is sharded, so this module loads where
torch is missing (the numpy reference's deploy side), and a process group set up by the caller is used as it is.
"""

from __future__ import annotations

import _thread
import atexit
import contextlib
import itertools
import os
import tempfile
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

from spikeport.errors import BackendUnavailableError, ConfigError, RankError, SpikeportError
from spikeport.run_report import RunReport
from spikeport.runtime.merge import merge_reports
from spikeport.runtime.recording import concat

# how long a rank waits for the others in a collective: the gather starts when rank 0 has run its own shard, so
# this bounds how much later the slowest rank may finish (shards are equal; a hung rank ends the job then)
TIMEOUT = timedelta(minutes=30)
# tests only: the rank named here fails as its shard starts, so that a test can fail one rank of a real job
FAIL_RANK_ENV = "SPIKEPORT_TEST_FAIL_RANK"

# how often a rank looks whether another rank's share has failed (_Watch), and the flag it looks for
POLL_S = 1.0
FAILED_KEY = "failed"
_RUNS = itertools.count()  # sharded runs of this process, in turn: each has its keys in the job's store

Shard = Callable[[int, int, str], RunReport]  # (first sample, end sample, this rank's device) -> the shard's report
Finish = Callable[[RunReport], RunReport]  # the merged report -> the run's (readout, comparison), on rank 0


@dataclass(frozen=True)
class Ranks:
    """This process's place in a torchrun job: its ``rank`` of ``world`` processes, ``local_rank`` on its machine."""

    rank: int
    world: int
    local_rank: int = 0

    @classmethod
    def from_env(cls) -> Ranks | None:
        """The job torchrun started this process in (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``); None outside a
        job of two or more processes."""
        values: dict[str, int] = {}
        for key, default in (("WORLD_SIZE", "1"), ("RANK", "0"), ("LOCAL_RANK", "0")):
            text = os.environ.get(key, default)
            try:
                values[key] = int(text)
            except ValueError:
                raise ConfigError(
                    f"{key}={text!r} in the environment: expected an integer (torchrun sets it)"
                ) from None
        world, rank, local = values["WORLD_SIZE"], values["RANK"], values["LOCAL_RANK"]
        if world <= 1:
            return None
        if not 0 <= rank < world or local < 0:
            raise ConfigError(
                f"RANK={rank}, LOCAL_RANK={local} in the environment: expected ranks of WORLD_SIZE={world}"
            )
        return cls(rank, world, local)

    def shard(self, samples: int) -> tuple[int, int]:
        """[first, end) of this rank's share of ``samples``: contiguous, so the shards in rank order are the samples
        in order; the first ``samples % world`` ranks run one more (np.array_split's split)."""
        size, more = divmod(samples, self.world)
        first = self.rank * size + min(self.rank, more)
        return first, first + size + (self.rank < more)

    def device(self, asked: str) -> str:
        """The device this rank runs on: its own GPU, ``cuda:LOCAL_RANK``, for any CUDA device asked (as training
        under torchrun), else ``asked``."""
        return f"cuda:{self.local_rank}" if asked.startswith("cuda") else asked

    def __str__(self) -> str:
        return f"rank {self.rank} of {self.world}"


def remove_launcher_folders_at_exit() -> None:
    """At this process's exit, the empty folders of torchrun's launcher that hold its error file
    (``$TMPDIR/torchelastic_<id>/<run>/attempt_<n>/<local rank>/``, ``TORCHELASTIC_ERROR_FILE``): torch makes one
    tree a job and never removes it. Every rank removes every empty folder of the tree, bottom up, so that the last
    to exit leaves nothing even where torchrun killed the others first (a failed rank ends the job with SIGTERM to
    the rest); a folder that holds anything (an error file, the logs of ``--redirects``) stays, as does a tree
    outside the temporary folder (``--log-dir``)."""
    error_file = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if error_file:
        atexit.register(_remove_empty_tree, Path(error_file).parent)


def _remove_empty_tree(folder: Path) -> None:
    top = next((p for p in (folder, *folder.parents) if p.name.startswith("torchelastic_")), None)
    if top is None or os.path.realpath(top.parent) != os.path.realpath(tempfile.gettempdir()):
        return
    for path, _, _ in sorted(os.walk(top), key=lambda entry: -len(entry[0])):  # the deepest first
        with contextlib.suppress(OSError):  # not empty, or removed by another rank
            os.rmdir(path)


@dataclass
class _Outcome:
    """What one rank sends to rank 0, and rank 0 to every rank: a run report, or the error instead."""

    report: RunReport | None = None
    error: str | None = None
    stopped: bool = False  # this rank stopped its share when another rank's failed (_Watch)


def run_sharded(ranks: Ranks, samples: int, device: str, run_shard: Shard, finish: Finish) -> RunReport:
    """The run report of ``samples`` samples sharded over the ranks of a torchrun job (see the module docstring):
    ``run_shard`` runs one rank's share, ``finish`` turns the merged report into the run's on rank 0. Every rank
    returns the whole run's report, or raises the same ``RankError``."""
    import torch.distributed as dist

    joined = _join(ranks, device)
    try:
        first, end = ranks.shard(samples)

        def mine() -> RunReport | None:
            if os.environ.get(FAIL_RANK_ENV) == str(ranks.rank):
                raise RuntimeError(f"a fault injected by {FAIL_RANK_ENV}={ranks.rank} (tests only)")
            return run_shard(first, end, ranks.device(device)) if end > first else None

        watch = _Watch(ranks)
        try:
            outcome = _attempt(mine)
            watch.finish()
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM (the CLI's Terminated) or another rank's failure
            watch.finish()
            if not watch.stopped:
                raise
            outcome = _Outcome(stopped=True)
        if outcome.error is not None:
            watch.failed()
        gathered: list[_Outcome] | None = [_Outcome() for _ in range(ranks.world)] if ranks.rank == 0 else None
        _collective(ranks, "gathering the shards", lambda: dist.gather_object(outcome, gathered, dst=0))
        result = _settle(ranks, gathered, finish) if gathered is not None else _Outcome()
        shipped = [replace(result, report=replace(result.report, recording=None) if result.report else None)]
        _collective(ranks, "sending the run report", lambda: dist.broadcast_object_list(shipped, src=0))
        final = result if ranks.rank == 0 else shipped[0]
        if final.error is not None:
            raise RankError(final.error)
        assert final.report is not None  # an outcome holds a report or an error
        return final.report
    finally:
        if joined:
            dist.destroy_process_group()


def _join(ranks: Ranks, device: str) -> bool:
    """Joins the job's process group (torchrun's MASTER_ADDR / MASTER_PORT) unless the caller has; whether it
    joined here (and leaves it when the run is done)."""
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        return False
    cuda = device.startswith("cuda")
    if cuda and ranks.local_rank < torch.cuda.device_count():  # a rank without its GPU fails in its shard
        torch.cuda.set_device(ranks.local_rank)
    try:
        dist.init_process_group("cpu:gloo,cuda:nccl" if cuda else "gloo", timeout=TIMEOUT)
    except (RuntimeError, ValueError) as err:
        raise BackendUnavailableError(f"{ranks}: could not join the torchrun job's process group ({err})") from None
    return True


def _collective(ranks: Ranks, what: str, call: Callable[[], object]) -> None:
    """A collective of every rank; a rank that died or did not answer within TIMEOUT ends the run on this one."""
    try:
        call()
    except RuntimeError as err:  # torch's DistError and the backends' errors are RuntimeErrors
        raise RankError(f"{ranks}: the other ranks did not answer while {what} ({_one_line(str(err))})") from None


def _settle(ranks: Ranks, gathered: list[_Outcome], finish: Finish) -> _Outcome:
    """Rank 0: the run's outcome from every rank's: the failed ranks named, or the merged report finished."""
    failed: dict[str, list[int]] = {}
    for rank, outcome in enumerate(gathered):
        if outcome.error is not None:
            failed.setdefault(outcome.error, []).append(rank)
    stopped = [rank for rank, outcome in enumerate(gathered) if outcome.stopped]
    if stopped and not failed:  # a failure another rank saw in the job's store but could not send: never expected
        failed["stopped when another rank reported a failure"] = stopped
    if failed:
        ranks_failed = sorted(rank for group in failed.values() for rank in group)
        who = _ranks_named(ranks_failed)
        early = f" ({_ranks_named(stopped)} stopped early)" if stopped and not set(stopped) & set(ranks_failed) else ""
        if len(failed) == 1:
            return _Outcome(error=f"{who} of {ranks.world} failed: {next(iter(failed))}{early}")
        causes = "; ".join(f"rank {group[0]}: {cause}" for cause, group in failed.items())
        return _Outcome(error=f"{who} of {ranks.world} failed: {causes}{early}")

    def merged() -> RunReport:
        reports = [outcome.report for outcome in gathered if outcome.report is not None]
        report = merge_reports(reports)
        recordings = [part.recording for part in reports]
        if any(recording is not None for recording in recordings):
            if any(recording is None for recording in recordings):
                raise ValueError("some shards were recorded and some were not")
            report.recording = concat([recording for recording in recordings if recording is not None])
        return finish(report)

    outcome = _attempt(merged)
    if outcome.error is not None:
        outcome.error = f"{ranks} failed after the shards were gathered: {outcome.error}"
    return outcome


def _ranks_named(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"


class _Watch:
    """Stops this rank's share as soon as another rank's has failed: a Lava share runs for hours, and the ranks'
    outcomes meet only in the gather, when each has finished its own. A rank whose share fails sets a flag in the
    job's key-value store (the one torchrun's rendezvous made, shared by every machine of the job); a thread of every
    rank looks for it every POLL_S while the share runs and interrupts the main thread as Ctrl-C would, which stops a
    Lava network and removes what it made (``LavaSession``); the rank then sends the gather a stopped outcome. Where
    the process group has no store, nothing is watched and each rank finishes its share (the gather still names the
    failed rank)."""

    def __init__(self, ranks: Ranks) -> None:
        import torch.distributed as dist

        try:
            store = dist.distributed_c10d._get_default_store()
        except (AttributeError, RuntimeError, ValueError):  # torch's private accessor, or a group without a store
            store = None
        # the keys of this run: torchrun's store lives as long as the job, and every rank runs the same calls in turn
        self.store = None if store is None else dist.PrefixStore(f"spikeport/run{next(_RUNS)}/", store)
        self.stopped = False  # this rank's share was interrupted because another rank's failed
        self._running = self.store is not None
        self._lock = threading.Lock()
        self._done = threading.Event()
        if self.store is not None:
            threading.Thread(target=self._watch, name="spikeport-rank-watch", daemon=True).start()

    def _watch(self) -> None:
        while not self._done.wait(POLL_S):
            try:
                seen = self.store is not None and self.store.check([FAILED_KEY])
            except RuntimeError:  # the store has gone: the job is ending anyway
                return
            if seen:
                with self._lock:
                    if self._running:
                        self.stopped = True
                        _thread.interrupt_main()  # KeyboardInterrupt in the share, as Ctrl-C
                return

    def finish(self) -> None:
        """This rank's share has ended: no interruption after this returns (one requested before it is raised
        here, on the loop's backward jump, inside the caller's ``try``)."""
        with self._lock:
            self._running = False
        self._done.set()
        for _ in range(2):  # a jump back: where Python raises a pending KeyboardInterrupt
            pass

    def failed(self) -> None:
        """This rank's share failed: every other rank stops its own."""
        if self.store is not None:
            with contextlib.suppress(RuntimeError):
                self.store.set(FAILED_KEY, "1")


def _attempt(call: Callable[[], RunReport | None]) -> _Outcome:
    """The outcome of ``call``: its report, or its error as one line (an unexpected one with where it was raised)."""
    try:
        return _Outcome(report=call())
    except Exception as err:  # every error of a shard is reported to rank 0, which names the rank
        if isinstance(err, SpikeportError):
            return _Outcome(error=_one_line(str(err)))
        where = traceback.extract_tb(err.__traceback__)[-1]
        cause = f"{type(err).__name__}: {err} ({Path(where.filename).name}:{where.lineno})"
        return _Outcome(error=_one_line(cause))


def _one_line(text: str) -> str:
    return " ".join(text.split())
