"""The diagnostics' outputs (JSON, PNG, HTML), each written through :func:`spikeport.atomic.atomic_write`:
never a half-written file."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spikeport.atomic import atomic_write

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _clean(obj: Any) -> Any:
    """JSON has no NaN/inf: write them as null; numpy scalars/arrays as plain Python."""
    import numpy as np

    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    if isinstance(obj, np.generic):
        return _clean(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def write_json(obj: Any, path: str | os.PathLike) -> Path:
    with atomic_write(path) as tmp:
        tmp.write_text(json.dumps(_clean(obj), indent=1) + "\n")
    return Path(path)


def write_text(text: str, path: str | os.PathLike) -> Path:
    with atomic_write(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def save_figure(fig: Figure, path: str | os.PathLike, dpi: int = 110) -> Path:
    import matplotlib.pyplot as plt

    with atomic_write(path) as tmp:
        fig.savefig(tmp, dpi=dpi, bbox_inches="tight", format=Path(path).suffix.lstrip(".") or "png")
    plt.close(fig)
    return Path(path)
