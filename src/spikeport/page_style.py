"""The style sheet every self-contained HTML page of spikeport shares: the diagnostics' pages (``analysis.html``)
and the report's (``report.html``, which adds its own rules after it). One leaf module, so neither page
writer imports the other for a CSS string."""

from __future__ import annotations

STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;
text-align:right}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}img{max-width:100%}
.note{color:#555;font-size:13px}code{background:#f5f5f5;padding:0 3px}"""
