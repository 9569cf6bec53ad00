"""Report figures drawn with matplotlib's Agg canvas (no pyplot, no display, no global figure state).

Each function takes an already aggregated table and returns a :class:`Figure` holding PNG bytes.
Systems keep one colour across all figures (``system_colors``).
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import FuncFormatter

from jobs.analysis.document import Figure
from judge.rubric import DIMENSIONS, STAGES

DPI = 144
STYLE = {
    "font.size": 9.5,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e3e6ea",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "axes.edgecolor": "#8a929c",
    "xtick.color": "#3c4650",
    "ytick.color": "#3c4650",
    "svg.fonttype": "none",
}
STATUS_COLORS = {"ok": "#2e8b57", "too_short": "#d9a441", "robots_disallowed": "#8c6bb1"}
FAILURE_COLOR = "#c8553d"


@contextmanager
def _figure(width: float, height: float) -> Iterator[MplFigure]:
    with matplotlib.rc_context(STYLE):
        fig = MplFigure(figsize=(width, height), layout="constrained")
        FigureCanvasAgg(fig)
        yield fig


def _finish(fig: MplFigure, key: str, alt: str, caption: str = "", *, basis: str) -> Figure:
    """Render to PNG at ``DPI``; the display width keeps 1 inch = 96 CSS px (crisp on HiDPI screens).

    ``basis`` says what the figure is computed on (which rows, how many); it opens the caption.
    """
    caption = f"Computed on {basis}." + (f" {caption}" if caption else "")
    buffer = io.BytesIO()
    with matplotlib.rc_context(STYLE):
        fig.savefig(buffer, format="png", dpi=DPI, facecolor="white")
    png = buffer.getvalue()
    pixels = int.from_bytes(png[16:20], "big")  # IHDR width
    return Figure(key, png, alt, caption, width_px=round(pixels * 96 / DPI))


def _thousands(value: float, _position: int) -> str:
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def system_colors(systems: Sequence[str]) -> dict[str, tuple[float, ...]]:
    """A stable colour per system (tab10, then tab20 for larger runs), by sorted name."""
    names = sorted(set(systems))
    cmap = matplotlib.colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {name: cmap(i % cmap.N) for i, name in enumerate(names)}


def leaderboard_intervals(table: pd.DataFrame, colors: dict[str, tuple[float, ...]], level: float) -> Figure:
    """Weighted score of each system with its bootstrap interval, best at the top."""
    rows = table.sort_values("weighted_total_content_score", ascending=True)
    n = len(rows)
    with _figure(8.0, 0.42 * n + 1.1) as fig:
        ax = fig.add_subplot()
        y = np.arange(n)
        score = rows["weighted_total_content_score"].to_numpy(float)
        low = rows.get("weighted_ci_low", pd.Series(np.nan, index=rows.index)).to_numpy(float)
        high = rows.get("weighted_ci_high", pd.Series(np.nan, index=rows.index)).to_numpy(float)
        for i, (name, value) in enumerate(zip(rows["model_name"], score, strict=True)):
            color = colors.get(name, "#4c72b0")
            if not np.isnan(low[i]):
                ax.plot(
                    [low[i], high[i]], [i, i], color=color, linewidth=2.4, alpha=0.55, solid_capstyle="round"
                )
            ax.plot([value], [i], "o", color=color, markersize=7, markeredgecolor="white")
            right = high[i] if not np.isnan(high[i]) else value
            ax.annotate(f"{value:.2f}", (right, i), xytext=(6, 0), textcoords="offset points", va="center")
        ax.set_yticks(y, rows["model_name"])
        ax.grid(axis="y", visible=False)
        ax.set_xlabel(f"weighted score (0-100), {level:.0%} bootstrap interval over queries")
        finite = np.concatenate([score, low[~np.isnan(low)], high[~np.isnan(high)]])
        span = max(float(np.ptp(finite)), 1.0)
        ax.set_xlim(float(finite.min()) - 0.08 * span, float(finite.max()) + 0.22 * span)
        ax.set_title("Leaderboard: weighted source-quality score")
        return _finish(
            fig,
            "leaderboard",
            "Dot plot of each system's weighted score with its bootstrap confidence interval.",
            f"Dots: weighted score. Bars: {level:.0%} bootstrap interval (queries resampled, paired).",
            basis=_leaderboard_basis(table),
        )


def _leaderboard_basis(table: pd.DataFrame) -> str:
    systems = f"{len(table)} systems"
    if "num_sources" in table and "num_queries" in table:
        return (
            f"{systems}, each score the mean over its cited sources ({int(table['num_sources'].sum()):,} "
            f"sources in all, up to {int(table['num_queries'].max()):,} queries per system)"
        )
    return f"{systems}, each score the mean over its cited sources"


def heatmap(
    frame: pd.DataFrame,
    key: str,
    title: str,
    *,
    cmap: str = "viridis",
    vmin: float | None = None,
    vmax: float | None = None,
    fmt: str = "{:.1f}",
    alt: str = "",
    caption: str = "",
    xlabel: str = "",
    ylabel: str = "",
    basis: str,
) -> Figure:
    """An annotated heatmap of a numeric frame (rows: index, columns: columns); NaN cells left blank."""
    values = frame.to_numpy(dtype=float)
    n_rows, n_cols = values.shape
    with _figure(max(4.8, 0.95 * n_cols + 2.6), max(2.4, 0.42 * n_rows + 1.3)) as fig:
        ax = fig.add_subplot()
        image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
        ax.grid(False)
        ax.set_xticks(range(n_cols), [str(c) for c in frame.columns], rotation=30, ha="right")
        ax.set_yticks(range(n_rows), [str(i) for i in frame.index])
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        norm = image.norm
        for (r, c), value in np.ndenumerate(values):
            if np.isnan(value):
                continue
            shade = image.cmap(norm(value))
            luminance = 0.299 * shade[0] + 0.587 * shade[1] + 0.114 * shade[2]
            ax.text(
                c,
                r,
                fmt.format(value),
                ha="center",
                va="center",
                fontsize=8,
                color="black" if luminance > 0.55 else "white",
            )
        fig.colorbar(image, ax=ax, shrink=0.85, pad=0.02)
        ax.set_title(title)
        return _finish(fig, key, alt or title, caption, basis=basis)


def win_probability_matrix(pairwise: pd.DataFrame, order: Sequence[str]) -> Figure:
    """P(row system scores above column system) over bootstrap replicates."""
    matrix = pairwise.pivot(index="system_a", columns="system_b", values="p_a_beats_b").reindex(
        index=list(order), columns=list(order)
    )
    return heatmap(
        matrix * 100.0,
        "win_probability",
        "P(row beats column), % of bootstrap replicates",
        cmap="RdBu",
        vmin=0,
        vmax=100,
        fmt="{:.0f}",
        alt="Matrix of pairwise probabilities that one system's weighted score beats another's.",
        basis=f"the weighted scores of {len(order)} systems' cited sources, paired bootstrap replicates",
        caption="Paired bootstrap over queries: each replicate scores every system on the same resampled "
        "query set. 50 % means indistinguishable.",
    )


def dimension_bars(means: pd.DataFrame, order: Sequence[str], colors: dict[str, tuple[float, ...]]) -> Figure:
    """One panel per rubric dimension: each system's mean score (1-5), systems in leaderboard order."""
    systems = [s for s in order if s in means.index][::-1]
    n = len(systems)
    with _figure(10.0, 2 * (0.22 * n + 0.9)) as fig:
        axes = fig.subplots(2, 4, sharey=True, sharex=True)
        for ax, dim in zip(axes.ravel(), DIMENSIONS, strict=True):
            values = means.reindex(systems)[dim.key].to_numpy(float)
            ax.barh(
                range(n),
                np.nan_to_num(values - 1.0),
                left=1.0,
                color=[colors.get(s, "#4c72b0") for s in systems],
                height=0.72,
            )
            for i, value in enumerate(values):
                if not np.isnan(value):
                    ax.text(value + 0.05, i, f"{value:.2f}", va="center", fontsize=7)
            ax.set_title(f"{dim.label}\n{dim.code}, weight x{dim.weight}", fontsize=8.5)
            ax.set_xlim(1, 5.6)
            ax.set_xticks([1, 2, 3, 4, 5])
            ax.grid(axis="y", visible=False)
        axes[0, 0].set_yticks(range(n), systems)
        axes[1, 0].set_yticks(range(n), systems)
        return _finish(
            fig,
            "dimensions",
            "Small multiples: mean score of each system on each of the 8 rubric dimensions.",
            "Mean score (1-5) per dimension; x3 / x2 is the dimension's weight in the weighted total.",
            basis=f"the scored sources of {n} systems, each dimension averaged over the sources that have it",
        )


def overlap_scatter(
    joined: pd.DataFrame, stats: pd.DataFrame, colors: dict[str, tuple[float, ...]]
) -> Figure:
    """Score vs SERP overlap across systems, one panel per level (URL, domain)."""
    serp = str(joined["serp_system"].iloc[0])
    levels = [("url_overlap_pct", "url", "URL"), ("domain_overlap_pct", "domain", "domain")]
    with _figure(9.0, 3.8) as fig:
        axes = fig.subplots(1, 2, sharey=True)
        for ax, (column, level, label) in zip(axes, levels, strict=True):
            x = joined[column].to_numpy(float)
            y = joined["weighted_total_content_score"].to_numpy(float)
            for name, xi, yi in zip(joined["system"], x, y, strict=True):
                ax.scatter([xi], [yi], s=46, color=colors.get(name, "#4c72b0"), edgecolor="white", zorder=3)
                ax.annotate(name, (xi, yi), xytext=(5, 4), textcoords="offset points", fontsize=7.5)
            if len(x) >= 2 and np.ptp(x) > 0:
                slope, intercept = np.polyfit(x, y, 1)
                grid = np.linspace(x.min(), x.max(), 20)
                ax.plot(grid, slope * grid + intercept, "--", color="#8a929c", linewidth=1)
            row = stats[(stats["serp_system"] == serp) & (stats["level"] == level)]
            rho = row["spearman_rho"].iloc[0] if len(row) else np.nan
            title = f"{label[0].upper()}{label[1:]} level"
            ax.set_title(f"{title}: Spearman rho = {rho:.2f}" if not np.isnan(rho) else title)
            ax.set_xlabel(f"% of sources also in {serp} results ({label})")
        axes[0].set_ylabel("weighted score")
        return _finish(
            fig,
            "overlap",
            f"Scatter of each system's weighted score against the share of its sources found in {serp}.",
            f"Each dot is a system. Left: same canonical URL in {serp}'s results for the query; right: same "
            "registered domain. Dashed: least-squares line.",
            basis=f"{len(joined)} systems (one point each), their sources compared with {serp}'s results",
        )


def status_bars(statuses: pd.DataFrame) -> Figure:
    """Pages per terminal crawl status."""
    rows = statuses.iloc[::-1]
    with _figure(7.5, 0.36 * len(rows) + 1.0) as fig:
        ax = fig.add_subplot()
        colors = [STATUS_COLORS.get(s, FAILURE_COLOR) for s in rows["status"]]
        ax.barh(range(len(rows)), rows["pages"], color=colors, height=0.7)
        for i, (count, share) in enumerate(zip(rows["pages"], rows["share_pct"], strict=True)):
            ax.annotate(
                f"{count:,} ({share:.1f} %)",
                (count, i),
                xytext=(4, 0),
                textcoords="offset points",
                va="center",
            )
        ax.set_yticks(range(len(rows)), rows["status"])
        ax.set_xlim(0, rows["pages"].max() * 1.25 + 1)
        ax.grid(axis="y", visible=False)
        ax.set_xlabel("pages")
        ax.xaxis.set_major_formatter(FuncFormatter(_thousands))
        ax.set_title("Crawl outcome per page")
        total = int(pd.to_numeric(statuses.iloc[:, -1], errors="coerce").sum())
        return _finish(
            fig,
            "crawl_status",
            "Bar chart of pages per crawl status.",
            basis=f"every distinct cited page the crawl tried ({total:,} pages), one status each",
        )


def token_bars(usage: pd.DataFrame) -> Figure:
    """Prompt tokens (uncached / cached) and output tokens per judge stage."""
    per_stage = (
        usage[usage.iloc[:, 0] != "total"]
        .groupby("stage", sort=False)[["prompt_tokens", "cached_prompt_tokens", "output_tokens"]]
        .sum()
    )
    per_stage = per_stage.reindex(
        [*[st for st in STAGES if st in per_stage.index], *[st for st in per_stage.index if st not in STAGES]]
    )
    with _figure(7.5, 0.5 * len(per_stage) + 1.3) as fig:
        ax = fig.add_subplot()
        y = np.arange(len(per_stage))
        uncached = per_stage["prompt_tokens"] - per_stage["cached_prompt_tokens"]
        parts = [
            (uncached, "prompt (computed)", "#4c72b0"),
            (per_stage["cached_prompt_tokens"], "prompt (prefix cache)", "#9ecae1"),
            (per_stage["output_tokens"], "output", "#dd8452"),
        ]
        left = np.zeros(len(per_stage))
        for values, label, color in parts:
            ax.barh(y, values, left=left, label=label, color=color, height=0.6)
            left += values.to_numpy(float)
        ax.set_yticks(y, per_stage.index)
        ax.invert_yaxis()  # stages top to bottom in request order
        ax.grid(axis="y", visible=False)
        ax.set_xlabel("tokens")
        ax.xaxis.set_major_formatter(FuncFormatter(_thousands))
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False, fontsize=8)
        return _finish(
            fig,
            "tokens",
            "Stacked bars of judge tokens per stage.",
            basis="every judge request of this run (page x query x stage), tokens summed per stage",
        )


def correctness_bars(table: pd.DataFrame, labels: dict[str, str]) -> Figure:
    """Spearman correlation of each score with answer correctness (over system x query pairs)."""
    rows = table.iloc[::-1]
    rho = rows["spearman_rho"].to_numpy(float)
    with _figure(7.5, 0.34 * len(rows) + 1.1) as fig:
        ax = fig.add_subplot()
        colors = ["#2f5d8a" if v >= 0 else FAILURE_COLOR for v in np.nan_to_num(rho)]
        ax.barh(range(len(rows)), np.nan_to_num(rho), color=colors, height=0.65)
        for i, value in enumerate(rho):
            if not np.isnan(value):
                ax.annotate(
                    f"{value:+.2f}",
                    (value, i),
                    xytext=(4 if value >= 0 else -4, 0),
                    textcoords="offset points",
                    va="center",
                    ha="left" if value >= 0 else "right",
                )
        ax.set_yticks(range(len(rows)), [labels.get(s, s) for s in rows["score"]])
        ax.axvline(0, color="#8a929c", linewidth=0.8)
        ax.set_xlim(-1, 1)
        ax.grid(axis="y", visible=False)
        ax.set_xlabel("Spearman correlation with answer correctness")
        return _finish(
            fig,
            "correctness",
            "Bar chart of each dimension's correlation with answer correctness.",
            basis=f"(system, query) pairs with a correctness label ({int(table['n'].max()):,} pairs), "
            "source scores averaged per pair",
        )
