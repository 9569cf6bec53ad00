"""Render a :class:`Report` to Markdown (GitHub-flavoured tables; figures as PNG files next to it)."""

from __future__ import annotations

from jobs.analysis.document import Bullets, Code, Figure, Note, Report, Table


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(table: Table) -> str:
    header = table.header()
    rows = table.rows()
    lines = [f"| {' | '.join(_escape(h) for h in header)} |"]
    if rows:
        aligns = ["---:" if numeric else "---" for _, numeric, _ in rows[0]]
    else:
        aligns = ["---"] * len(header)
    lines.append(f"| {' | '.join(aligns)} |")
    for row in rows:
        cells = [f"**{_escape(text)}**" if em else _escape(text) for text, _, em in row]
        lines.append(f"| {' | '.join(cells)} |")
    caption = f"*{table.caption}*\n\n" if table.caption else ""
    return caption + "\n".join(lines)


def render_markdown(report: Report, figure_dir: str = "figures") -> str:
    """The report as Markdown; figure ``key`` is linked as ``<figure_dir>/<key>.png``."""
    out = [f"# {report.title}", "", report.subtitle, ""]
    if report.cards:
        out += ["| " + " | ".join(label for label, _ in report.cards) + " |"]
        out += ["| " + " | ".join("---:" for _ in report.cards) + " |"]
        out += ["| " + " | ".join(value for _, value in report.cards) + " |", ""]
    out += ["## Contents", ""] + [f"- [{s.title}](#{s.id})" for s in report.sections] + [""]
    for section in report.sections:
        out += [f'<a id="{section.id}"></a>', "", f"## {section.title}", ""]
        if section.intro:
            out += [section.intro, ""]
        for block in section.blocks:
            if isinstance(block, Table):
                out += [_table(block), ""]
            elif isinstance(block, Figure):
                out += [f"![{block.alt}]({figure_dir}/{block.key}.png)", ""]
                if block.caption:
                    out += [f"*{block.caption}*", ""]
            elif isinstance(block, Note):
                out += [f"> {'**Note:** ' if block.kind == 'warning' else ''}{block.text}", ""]
            elif isinstance(block, Bullets):
                out += [f"- {item}" for item in block.items] + [""]
            elif isinstance(block, Code):
                out += [
                    f"<details><summary>{block.caption or 'show'}</summary>",
                    "",
                    "```json",
                    block.text,
                    "```",
                    "",
                    "</details>",
                    "",
                ]
    return "\n".join(out).rstrip() + "\n"
