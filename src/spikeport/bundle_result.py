"""A bundle's ``result.json`` held to the bundle it lies in (``bundle.json`` and ``expected.json`` beside it).

A result comes back from a vLab VM as a file anyone may have edited. Read in its bundle folder, it must be of the
bundle's artifact, samples and drive, and its verdict is recomputed rather than believed: the chip's predictions
are computed from its outputs, so outputs identical to the reference's make predictions identical to the
reference's (``expected.json``), and a result that says ``outputs_identical: true`` beside another prediction, or
names a first mismatch after a sample whose prediction already differs, or claims another accuracy for the same
predictions, is refused naming the field. The expected figures must be the bundle's own (their SHA-256 in
``bundle.json``). A result copied back alone is held to its own rules only (``run_report``).

Standard library only, as ``run_report``, which calls it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spikeport.errors import ReportError

MAX_BYTES = 2**30  # expected.json: a run report


@dataclass(frozen=True)
class Claimed:
    """What a result says (the fields its verdict rests on)."""

    artifact_digest: str | None
    samples: int
    T: int | None
    drive: str
    predictions: list[int] | None
    accuracy: float | None
    outputs_identical: bool | None
    first_mismatch: dict[str, Any] | None


def check(result: Claimed, path: Path) -> None:
    """``result`` (read from ``path``) against the bundle around it, if ``path`` lies in one; a ReportError naming
    the field otherwise."""
    manifest_path = path.parent / "bundle.json"
    try:
        manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else None
    except (OSError, ValueError, RecursionError):
        return  # not a manifest spikeport wrote: nothing to hold the result to
    if not isinstance(manifest, dict) or manifest.get("schema") != "spikeport.bundle":
        return
    for key, got, want in (
        ("artifact_digest", result.artifact_digest, manifest.get("artifact_digest")),
        ("samples", result.samples, manifest.get("samples")),
        ("hardware.drive", result.drive, manifest.get("drive")),
    ):
        if got != want:
            raise ReportError(
                path, key, f"{_short(got)}, but the bundle it lies in ran {_short(want)} ({manifest_path}): "
                "the result of another bundle, or edited"
            )  # fmt: skip
    expected = _expected(path.parent / "expected.json", manifest)
    _check_verdict(result, expected, path)


def _expected(path: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """The bundle's expected.json, as the manifest's SHA-256 says it is."""
    files = manifest.get("files")
    digest = files.get("expected.json") if isinstance(files, dict) else None
    try:
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            raise ReportError(path, None, "missing, not a regular file or too large: the bundle's expected run")
        data = path.read_bytes()
        expected = json.loads(data)
    except (OSError, ValueError, RecursionError) as err:
        raise ReportError(path, None, f"not the bundle's expected run ({str(err)[:120]})") from None
    if hashlib.sha256(data).hexdigest() != digest:
        raise ReportError(path, None, "changed since the bundle was written (its SHA-256 is not bundle.json's)")
    if not isinstance(expected, dict):
        raise ReportError(path, None, "not a run report")
    return expected


def _check_verdict(result: Claimed, expected: dict[str, Any], path: Path) -> None:
    want = expected.get("predictions")
    got = result.predictions
    if expected.get("T") is not None and result.T is not None and result.T != expected["T"]:
        raise ReportError(path, "T", f"{result.T}, the bundle's expected run has T {expected['T']}")
    if not isinstance(want, list) or not want:
        return  # a network without a readout predicts nothing: the outputs' verdict stands alone
    if got is None:
        raise ReportError(path, "predictions", f"missing: the bundle's expected run predicts {len(want)} samples")
    differ = [i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b]
    if differ and result.outputs_identical:
        i = differ[0]
        raise ReportError(
            path, "hardware.outputs_identical", f"true, but {len(differ)} of {len(want)} predictions differ from the "
            f"bundle's expected ones (sample {i}: {got[i]}, expected {want[i]}): the outputs cannot be identical"
        )  # fmt: skip
    first = (result.first_mismatch or {}).get("sample")
    if differ and isinstance(first, int) and first > differ[0]:
        raise ReportError(
            path, "hardware.first_mismatch.sample", f"{first}, but the prediction of sample {differ[0]} already "
            "differs from the bundle's expected one"
        )  # fmt: skip
    if not differ and result.accuracy is not None and expected.get("accuracy") is not None:
        if abs(result.accuracy - expected["accuracy"]) > 1e-9:
            raise ReportError(
                path, "accuracy", f"{result.accuracy}, but the same predictions scored {expected['accuracy']} in the "
                "bundle's expected run"
            )  # fmt: skip


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
