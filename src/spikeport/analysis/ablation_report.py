"""Tables 1-3 and the training curves of the ablation (seed 000 Sec. 5): JSON, markdown, PNG, HTML."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from spikeport.analysis.html import img, page, table  # noqa: E402
from spikeport.analysis.io import save_figure  # noqa: E402
from spikeport.atomic import write_json, write_text  # noqa: E402


def _m(v: float | None) -> str:
    if v is None:
        return "n/a"
    for scale, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if v >= scale:
            return f"{v / scale:.2f}{unit}"
    return f"{v:.0f}"


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.2f}"


def tables(result: dict) -> dict[str, tuple[list[str], list[list]]]:
    rows = result["rows"]
    t1 = (
        ["Model", "Parameters", "FLOPs (Linear/Conv MACs)", "Attention MACs", "SOPs (measured)"],
        [
            [
                r["name"],
                _m(r["ops"]["params"]),
                _m(r["ops"]["module_macs"]),
                _m(r["ops"]["attention_macs"]),
                _m(r["ops"]["sops"]),
            ]
            for r in rows
        ],
    )

    def perf(key: str) -> tuple[list[str], list[list]]:
        return (
            ["Model", "Epoch", "Train Loss", "Val Loss", "Top-1 (%)", "Top-5 (%)"],
            [
                [
                    r["name"],
                    r[key]["epoch"],
                    f"{r[key]['train_loss']:.4f}",
                    f"{r[key]['val_loss']:.4f}",
                    _pct(r[key]["top1"]),
                    _pct(r[key]["top5"]),
                ]
                for r in rows
            ],
        )

    return {
        "Table 1: parameters and operations per image": t1,
        "Table 2: final epoch": perf("final"),
        "Table 3: best epoch (by top-1)": perf("best"),
    }


def markdown(result: dict) -> str:
    lines = [
        f"# Ablation (seed 000 Sec. 5): {result['config']['preset']} on {result['dataset']}, "
        f"{result['config']['epochs']} epochs, identical hyperparameters\n"
    ]
    for title, (cols, rows) in tables(result).items():
        lines += [f"## {title}\n", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(str(v) for v in r) + " |" for r in rows]
        lines.append("")
    lines += [f"Operations: {result['ops_note']}.", "", f"Top-5: {result['top5_note']}.", ""]
    return "\n".join(lines)


def plot_curves(result: dict, path: Path) -> Path:
    variants = list(dict.fromkeys(r["variant"] for r in result["rows"]))
    fig, axes = plt.subplots(2, len(variants), figsize=(4.2 * len(variants), 6.4), squeeze=False)
    for c, variant in enumerate(variants):
        for r in (r for r in result["rows"] if r["variant"] == variant):
            ep = [h["epoch"] for h in r["curves"]]
            color = "C0" if r["arch"] == "vit" else "C3"
            label = "ViT" if r["arch"] == "vit" else "Spikformer"
            axes[0, c].plot(ep, [h["test_acc"] for h in r["curves"]], color=color, label=f"{label} test")
            if "train_acc" in r["curves"][0]:
                axes[0, c].plot(ep, [h["train_acc"] for h in r["curves"]], color=color, ls="--", label=f"{label} train")
            axes[1, c].plot(ep, [h["test_loss"] for h in r["curves"]], color=color, label=f"{label} val")
            axes[1, c].plot(ep, [h["train_loss"] for h in r["curves"]], color=color, ls="--", label=f"{label} train")
        axes[0, c].set_title(variant.replace("_", " "), fontsize=9)
        axes[0, c].set_ylim(0, 1)
        axes[0, c].set_ylabel("accuracy")
        axes[1, c].set_ylabel("loss")
        axes[1, c].set_xlabel("epoch")
        axes[0, c].legend(fontsize=7)
        axes[1, c].legend(fontsize=7)
    cfg = result["config"]
    fig.suptitle(
        f"ablation: {cfg['preset']} on {result['dataset']}, torch training (spikeport.train), seed {cfg['seed']}",
        fontsize=9,
    )
    fig.tight_layout()
    return save_figure(fig, path)


def write_report(result: dict, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    plot_curves(result, out / "curves.png")
    result = {**result, "files": ["ablation.json", "ablation.md", "curves.png", "index.html"]}
    write_json(out / "ablation.json", result)
    write_text(out / "ablation.md", markdown(result))
    parts = [
        f"<p class='note'>schema {result['schema']} v{result['schema_version']}; dataset {result['dataset']} "
        f"({result['test_images']} test images); per-run folders hold checkpoints and metrics</p>"
    ]
    for title, (cols, rows) in tables(result).items():
        parts += [f"<h2>{title}</h2>", table(cols, rows)]
    parts += [
        f"<p class='note'>{result['ops_note']}. {result['top5_note']}.</p>",
        "<h2>Training curves</h2>",
        img(out / "curves.png", "training curves"),
    ]
    write_text(out / "index.html", page(f"spikeport ablation: {result['config']['preset']}", parts))
    return result
