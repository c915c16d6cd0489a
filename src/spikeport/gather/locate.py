"""Where a run report's artifact is now: the path it names, read from where the run report lies, or found by digest.

A run report names its artifact as the path ``spikeport run`` was given (``demo/build/digits-ssa/model.spk.h5``,
relative to the folder it ran in; a bundle's ``result.json`` names ``model.spk.h5`` beside it). The report runs
from anywhere (``cd elsewhere && spikeport report ../project/demo/reports/ssa-lava.json``), so the path is tried,
in this order, and the first file whose root digest is the run report's ``artifact_digest`` wins:

1. as written (absolute, or relative to the working folder);
2. relative to the run report's folder and to each folder above it (the folder the run ran in is one of them);
3. each tail of the written path (``digits-ssa/model.spk.h5``, ``model.spk.h5``) in those folders: a project folder
   that moved or was copied;
4. by digest: every ``*.spk.h5`` a few levels below the run report's parent folder (``demo/`` for
   ``demo/reports/x.json``), the first whose root digest is the run's.

A run report without a digest (a lava-dl netx file, an artifact of schema 1) takes the first file that exists.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from spikeport.ir.artifact import read_digest

UP = 4  # folders above the run report's own that are tried
DEPTH, MAX_FILES = 4, 500  # the digest search: levels below the run report's parent folder, artifacts read at most


@dataclass
class Located:
    """The artifact found for a run report (``path`` None: not found), how, and what was looked at."""

    path: Path | None
    how: str = ""  # "as written", "beside the run report", "by digest"
    tried: list[str] = field(default_factory=list)  # the places looked in, for the error message
    other: Path | None = None  # a file at a tried path with another root digest (another conversion)

    def problem(self, written: str, digest: str | None) -> str:
        """Why no artifact was found, naming the path the run report gives and where it was looked for."""
        if self.other is not None:
            return (
                f"{written}: {self.other} is another conversion than the one that ran (root digest differs from "
                f"{(digest or '')[:12]}...), and no artifact with the run's digest was found ({'; '.join(self.tried)})"
            )
        return f"{written} not found ({'; '.join(self.tried)})"


def locate_artifact(written: str, digest: str | None, report: str | os.PathLike[str] | None) -> Located:
    """The artifact a run report names (``written``, its root digest ``digest``) for the run report at ``report``
    (None: a run report held in memory, only the written path is tried). See the module docstring."""
    given = Path(written).expanduser()
    folders = _folders(report)
    candidates = [given]
    if not given.is_absolute():
        candidates += [folder / given for folder in folders]
    tails = [Path(*given.parts[-k:]) for k in range(len(given.parts) - 1, 0, -1)]
    candidates += [folder / tail for tail in tails for folder in folders]
    found = Located(None)
    found.tried.append("as written" + ("" if given.is_absolute() else f", from {Path.cwd()}"))
    if folders:
        found.tried.append(f"from {folders[0]} and the {len(folders) - 1} folders above it")
    seen: set[Path] = set()
    for candidate in candidates:
        key = _key(candidate)
        if key in seen:
            continue
        seen.add(key)
        if _matches(candidate, digest, found):
            found.path = candidate
            found.how = "as written" if candidate == given else "relative to the run report's folder"
            return found
    if digest and folders:
        root = folders[1] if len(folders) > 1 else folders[0]
        found.tried.append(f"a .spk.h5 of root digest {digest[:12]}... up to {DEPTH} levels below {root}")
        for candidate in _artifacts_below(root):
            if _key(candidate) not in seen and read_digest(candidate) == digest:
                found.path, found.how = candidate, "by digest"
                return found
    return found


def _folders(report: str | os.PathLike[str] | None) -> list[Path]:
    """The run report's folder and up to ``UP`` folders above it (absolute)."""
    if report is None:
        return []
    start = Path(report).expanduser().resolve().parent
    return [start, *list(start.parents)[:UP]]


def _key(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()


def _matches(path: Path, digest: str | None, found: Located) -> bool:
    """``path`` is a file and, where the run report has a digest, the artifact of that digest (a file of another
    digest is remembered in ``found.other``)."""
    try:
        if not path.is_file():
            return False
    except OSError:  # a folder on the way that cannot be searched
        return False
    if not digest:
        return True
    if read_digest(path) == digest:
        return True
    found.other = found.other or path
    return False


def _artifacts_below(root: Path) -> list[Path]:
    """The ``*.spk.h5`` files up to ``DEPTH`` levels below ``root``, nearest first, at most ``MAX_FILES``;
    hidden folders and unreadable ones skipped."""
    out: list[Path] = []
    level = [root]
    for _ in range(DEPTH + 1):
        below: list[Path] = []
        for folder in level:
            try:
                entries = sorted(folder.iterdir())
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                if entry.name.endswith(".spk.h5") and entry.is_file():
                    out.append(entry)
                    if len(out) >= MAX_FILES:
                        return out
                elif entry.is_dir() and not entry.is_symlink():
                    below.append(entry)
        level = below
    return out
