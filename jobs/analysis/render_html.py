"""Render a :class:`Report` to one self-contained HTML file (inline CSS, figures as data: URIs, no JS)."""

from __future__ import annotations

import base64
from html import escape

from jobs.analysis.document import Block, Bullets, Figure, Note, Report, Section, Table

CSS = """
:root { --ink:#1f2933; --muted:#5f6b7a; --line:#e3e6ea; --accent:#2f5d8a; --bg:#f7f8fa; --warn:#fff4e5; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color:var(--ink); background:var(--bg); }
header { background:#fff; border-bottom:1px solid var(--line); padding:24px 32px 18px; }
header h1 { margin:0 0 4px; font-size:24px; }
header p { margin:0; color:var(--muted); }
.layout { display:flex; align-items:flex-start; }
nav { position:sticky; top:0; width:230px; flex:none; padding:20px 12px 20px 24px; max-height:100vh;
      overflow:auto; }
nav a { display:block; padding:4px 8px; color:var(--muted); text-decoration:none; border-radius:4px; }
nav a:hover { background:#e9eef4; color:var(--ink); }
main { flex:1; min-width:0; padding:20px 32px 48px 8px; max-width:1180px; }
.cards { display:grid; grid-template-columns:repeat(auto-fill, minmax(160px, 1fr)); gap:12px;
         margin:0 0 8px; }
.card { background:#fff; border:1px solid var(--line); border-radius:8px; padding:12px 14px; }
.card .value { font-size:22px; font-weight:600; }
.card .label { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
section { background:#fff; border:1px solid var(--line); border-radius:8px; padding:18px 22px;
          margin:18px 0; }
section h2 { margin:0 0 6px; font-size:18px; }
section > p.intro { color:var(--muted); margin:0 0 12px; max-width:900px; }
.table-wrap { overflow-x:auto; margin:10px 0 16px; }
table { border-collapse:collapse; font-size:13px; min-width:40%; }
caption { caption-side:top; text-align:left; color:var(--muted); padding:0 0 6px; font-size:12.5px; }
th, td { padding:5px 10px; border-bottom:1px solid var(--line); text-align:left; white-space:nowrap; }
th { background:#f1f4f7; font-weight:600; white-space:normal; vertical-align:bottom; }
td.num { text-align:right; font-variant-numeric:tabular-nums; }
tbody tr:nth-child(even) { background:#fafbfc; }
tbody tr:hover { background:#eef3f8; }
td.em { font-weight:700; }
figure { margin:12px 0 18px; }
figure img { max-width:100%; height:auto; border:1px solid var(--line); border-radius:6px; background:#fff; }
figcaption { color:var(--muted); font-size:12.5px; margin-top:4px; max-width:900px; }
.note { border-left:4px solid var(--accent); background:#eef3f8; padding:8px 12px; margin:10px 0;
        border-radius:0 6px 6px 0; }
.note.warning { border-color:#d9822b; background:var(--warn); }
ul.findings { margin:4px 0 4px; padding-left:20px; }
ul.findings li { margin:4px 0; }
details { margin:10px 0; }
summary { cursor:pointer; color:var(--accent); }
pre { background:#f4f6f8; border:1px solid var(--line); border-radius:6px; padding:12px; overflow:auto;
      font-size:12px; max-height:520px; }
footer { color:var(--muted); font-size:12px; padding:0 32px 32px 262px; }
@media (max-width: 900px) { nav { display:none; } main { padding:16px; } footer { padding:0 16px 24px; } }
@media print { nav { display:none; } body { background:#fff; } section { break-inside:avoid-page; }
               main { padding:0; max-width:none; } footer { padding:0; } }
"""


def _table(table: Table) -> str:
    head = "".join(f"<th>{escape(name)}</th>" for name in table.header())
    body = []
    for row in table.rows():
        cells = []
        for text, numeric, emphasised in row:
            classes = " ".join(c for c, on in (("num", numeric), ("em", emphasised)) if on)
            attr = f' class="{classes}"' if classes else ""
            cells.append(f"<td{attr}>{escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    caption = f"<caption>{escape(table.caption)}</caption>" if table.caption else ""
    return (
        f'<div class="table-wrap"><table>{caption}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _figure(figure: Figure) -> str:
    data = base64.b64encode(figure.png).decode("ascii")
    caption = f"<figcaption>{escape(figure.caption)}</figcaption>" if figure.caption else ""
    width = f' style="width:{figure.width_px}px"' if figure.width_px else ""
    return (
        f'<figure id="fig-{escape(figure.key)}"><img alt="{escape(figure.alt)}"{width} '
        f'src="data:image/png;base64,{data}">{caption}</figure>'
    )


def _block(block: Block) -> str:
    if isinstance(block, Table):
        return _table(block)
    if isinstance(block, Figure):
        return _figure(block)
    if isinstance(block, Note):
        return f'<div class="note {block.kind}">{escape(block.text)}</div>'
    if isinstance(block, Bullets):
        return '<ul class="findings">' + "".join(f"<li>{escape(item)}</li>" for item in block.items) + "</ul>"
    summary = escape(block.caption or "show")
    return f"<details><summary>{summary}</summary><pre>{escape(block.text)}</pre></details>"


def _section(section: Section) -> str:
    intro = f'<p class="intro">{escape(section.intro)}</p>' if section.intro else ""
    blocks = "\n".join(_block(b) for b in section.blocks)
    return f'<section id="{escape(section.id)}"><h2>{escape(section.title)}</h2>{intro}\n{blocks}</section>'


def render_html(report: Report) -> str:
    """The whole report as one HTML document; it loads nothing from anywhere."""
    cards = "".join(
        f'<div class="card"><div class="value">{escape(value)}</div>'
        f'<div class="label">{escape(label)}</div></div>'
        for label, value in report.cards
    )
    nav = "".join(f'<a href="#{escape(s.id)}">{escape(s.title)}</a>' for s in report.sections)
    sections = "\n".join(_section(s) for s in report.sections)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(report.title)}</title>
<style>{CSS}</style>
</head>
<body>
<header><h1>{escape(report.title)}</h1><p>{escape(report.subtitle)}</p></header>
<div class="layout">
<nav aria-label="Sections">{nav}</nav>
<main>
<div class="cards" id="summary">{cards}</div>
{sections}
</main>
</div>
<footer>Generated by sourcebench report. Self-contained: figures are embedded; nothing is loaded from the
network.</footer>
</body>
</html>
"""
