"""Self-contained HTML pages for the diagnostics: images embedded as base64, numbers in tables."""

from __future__ import annotations

import base64
import html
from pathlib import Path

from spikeport.page_style import STYLE


def img(path: Path, alt: str) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def table(columns: list[str], rows: list[list]) -> str:
    def cell(v: object) -> str:
        if isinstance(v, float):
            return "n/a" if v != v else f"{v:.4g}"
        return html.escape("n/a" if v is None else str(v))

    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def page(title: str, parts: list[str]) -> str:
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>{''.join(parts)}</body></html>\n"
    )


def analysis_page(result: dict, out: Path, title: str) -> str:
    """``spikeport analyze``'s page: the model, then one section per statistic, each with its figure in ``out``."""
    parts = _model_part(result) + _locality_part(result, out) + _heads_part(result, out) + _cosine_part(result, out)
    return page(f"spikeport analyze: {title}", parts)


def _model_part(result: dict) -> list[str]:
    m = result["model"]
    return [
        f"<p class='note'>schema {result['schema']} v{result['schema_version']}; executor "
        f"{html.escape(result['executor'])}; {result['samples']} images; accuracy on them: "
        f"{'n/a' if result.get('accuracy_on_samples') is None else format(result['accuracy_on_samples'], '.4f')}"
        f"</p>",
        table(
            ["arch", "attention", "depth", "heads", "dim", "grid", "T", "mlp", "skip"],
            [
                [
                    m["arch"],
                    m["attention"],
                    m["depth"],
                    m["num_heads"],
                    m["embed_dim"],
                    "x".join(map(str, m["grid"])),
                    m["T"],
                    m["mlp"],
                    m["skip"],
                ]
            ],
        ),
    ]


def _locality_part(result: dict, out: Path) -> list[str]:
    """The locality of each kind of map over all blocks, then per block."""
    fields = ("share_within_radius", "uniform_share_within_radius", "normalised_entropy", "mean_distance", "empty_rows")
    rows = [[f"all blocks: {kind}", *(s[f] for f in fields)] for kind, s in result["locality_overall"].items()]
    for blk in result["blocks"]:
        rows += [[f"block {blk['block']}: {kind}", *(s[f] for f in fields)] for kind, s in blk["locality"].items()]
    radius = next(iter(result["locality_overall"].values()))["radius"]
    parts = [
        "<h2>Attention locality (seed 004)</h2>",
        table(
            [
                "maps",
                f"share within {radius}",
                "uniform share",
                "entropy / log N",
                "mean distance",
                "skipped rows (all zero)",
            ],
            rows,
        ),
        img(out / "locality.png", "locality"),
        f"<p class='note'>{html.escape(result['method']['locality'])}</p>",
    ]
    if "effective_mixing" in result["method"] and any("effective" in b["locality"] for b in result["blocks"]):
        parts.append(f"<p class='note'>{html.escape(result['method']['effective_mixing'])}</p>")
    return parts


def _heads_part(result: dict, out: Path) -> list[str]:
    """The head correlation per block (and, where measured, the mass on the class / first token)."""
    extra = [
        (k, label)
        for k, label in (("cls_mass", "mass on the class token"), ("first_token_mass", "mass on the first token"))
        if k in result["blocks"][0]
    ]
    return [
        "<h2>Attention-head correlation (seed 000 Sec. 5.4)</h2>",
        table(
            ["block", "mean off-diagonal", "max off-diagonal"] + [label for _, label in extra],
            [
                [b["block"], b["head_correlation"]["mean_offdiag"], b["head_correlation"]["max_offdiag"]]
                + [b[k] for k, _ in extra]
                for b in result["blocks"]
            ],
        ),
        img(out / "heads.png", "head correlation"),
        f"<p class='note'>{html.escape(result['method']['head_correlation'])}</p>",
    ]


def _cosine_part(result: dict, out: Path) -> list[str]:
    """The tokens' cosine similarity per representation."""
    return [
        "<h2>Token cosine similarity per layer (seed 002 Fig. 1)</h2>",
        table(
            ["layer", "mean cosine", "share >= 0.9", "share >= 0.99", "silent tokens", "pairs"],
            [
                [
                    f"{r['layer']} ({r['name']})",
                    r["cosine"]["mean"],
                    r["cosine"]["share_ge_0.9"],
                    r["cosine"]["share_ge_0.99"],
                    r["cosine"]["silent_token_share"],
                    r["cosine"]["pairs"],
                ]
                for r in result["representations"]
            ],
        ),
        img(out / "cosine.png", "cosine histograms"),
        f"<p class='note'>{html.escape(result['method']['cosine'])}</p>",
    ]
