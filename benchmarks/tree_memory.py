"""Peak memory of a whole process tree, sampled from /proc while it runs (Linux).

Lava's CPU runtime forks one OS process per ProcessModel; the RSS of any one of them says little (pages shared
with the parent are counted in each). Two measures are sampled here, both over the tree rooted at one pid:

- ``pss``: the sum of the proportional set sizes (``/proc/<pid>/smaps_rollup``): each shared page counted once,
  split between the processes that map it; what the tree costs the machine;
- ``used``: the machine's used memory (MemTotal - MemAvailable) above what it was when sampling started: the
  same cost seen from outside, including shared memory segments (Lava's channels) and page cache the tree
  dirtied, but also whatever other work on the machine did meanwhile (so it is reported beside ``pss``).

    with TreeMemory(pid) as mem:
        ...wait for the process...
    mem.peak_pss, mem.peak_used   # bytes
"""

from __future__ import annotations

import os
import signal
import threading
import time


def descendants(root: int) -> list[int]:
    """``root`` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def pss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # the process ended meanwhile
        pass
    return 0


def machine_used_bytes() -> int:
    info = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, value = line.split(":", 1)
            info[key] = int(value.split()[0]) * 1024
    return info["MemTotal"] - info["MemAvailable"]


class TreeMemory:
    """Samples the tree of ``root`` every ``every_s`` in a background thread; peaks in bytes."""

    def __init__(self, root: int, every_s: float = 0.5, kill_above_used: float | None = None):
        self.root, self.every_s = root, every_s
        # the machine is shared: a tree that pushes its used memory past this is killed (its process group)
        self.kill_above_used = kill_above_used
        self.killed = False
        self.peak_pss = self.peak_used = self.peak_processes = 0
        self.baseline_used = machine_used_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> None:
        pids = descendants(self.root)
        self.peak_processes = max(self.peak_processes, len(pids))
        self.peak_pss = max(self.peak_pss, sum(pss_bytes(p) for p in pids))
        used = machine_used_bytes()
        self.peak_used = max(self.peak_used, used - self.baseline_used)
        if self.kill_above_used is not None and used > self.kill_above_used and not self.killed:
            self.killed = True
            try:
                os.killpg(os.getpgid(self.root), signal.SIGKILL)
            except OSError:
                pass

    def _loop(self) -> None:
        while not self._stop.is_set():
            start = time.monotonic()
            self.sample()
            self._stop.wait(max(0.05, self.every_s - (time.monotonic() - start)))
