"""Coverage of an audit: the share of selected sources that were fetched ok and fully judged.

A leaderboard is only as good as the sources behind it. :func:`measure_coverage` reads the scored
sources (``scores/source_scores.parquet``) and counts, overall and per system, how many selected
sources were fetched ok and how many were scored on all eight dimensions. The audit is
**complete** when every system reaches ``coverage.min_share`` and no judgment failed with
``error`` (a transport failure of the judge is never an acceptable result). Otherwise the audit
exits non-zero, the leaderboard and report are still written but stamped incomplete, and
:func:`diagnosis` says in one paragraph what went wrong and which flag or setting fixes the common
cases. The result is kept in ``scores/coverage.json`` for the report.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import ConfigDict, Field

from crawler.base import ConfigModel

#: The fix for the common failure statuses, as a flag or setting a user can paste.
FIXES: dict[str, str] = {
    "blocked_address": "private, loopback and metadata addresses are refused by default; to allow a host "
    "for a local test rerun the same --run with --allowlist HOST (e.g. --allowlist 127.0.0.1, or "
    "--set 'crawl.network.allowlist=[127.0.0.1]'), or --allow-private-networks for an intranet",
    "robots_disallowed": "robots.txt disallows these pages; --set crawl.network.obey_robots=false "
    "fetches them anyway (recorded in the manifest)",
    "timeout": "pages timed out; a rerun of the same --run retries them, and --set crawl.limits.timeout_s=60 "
    "gives slow sites longer",
    "error": "pages failed in transport (connection refused, reset, DNS) or are missing from a replayed "
    "archive; a rerun of the same --run fetches live pages again",
    "http_error": "sites answered with an HTTP error (404, 403, 5xx); `audit --retry-failed` fetches them "
    "again once they recover; a dead link stays a 0 under the official policy",
    "too_short": "pages had too little text; --set crawl.render.policy=auto renders JavaScript pages",
    "too_large": "pages were larger than crawl.limits.max_bytes; --set crawl.limits.max_bytes=N raises it",
    "unsupported_type": "pages were not HTML, text or PDF; they cannot be judged",
    "missing": "the crawl has no record of these URLs (an interrupted crawl); rerun the same --run",
    "judge_error": "the judge failed in transport (endpoint down, rate limits, timeouts); fix the endpoint "
    "and rerun the same --run: `error` judgments are retried, nothing else is judged again",
    "unscorable": "the judge answered but not with valid scores; `audit --retry-failed` asks again",
}


class CoverageConfig(ConfigModel):
    """When an audit counts as complete (``sourcebench audit`` exits 0 only then)."""

    model_config = ConfigDict(validate_assignment=True)

    min_share: float = Field(
        default=0.8,
        ge=0,
        le=1,
        description="Least share of each system's selected sources that must be fetched ok and scored on "
        "all eight dimensions; below it the audit exits non-zero and the leaderboard and report are "
        "stamped incomplete. Judgment errors fail the audit whatever this says.",
    )


def _counts(table: pa.Table) -> dict[str, int]:
    selected = table.num_rows
    statuses = table.select(["page_status", "judge_status"]).to_pylist()
    fetched = sum(row["page_status"] == "ok" for row in statuses)
    judged = sum(row["judge_status"] == "scored" for row in statuses)
    return {
        "selected": selected,
        "fetched_ok": fetched,
        "judged": judged,
        "share": round(judged / selected, 4) if selected else 0.0,
    }


def _reasons(table: pa.Table, top: int = 3) -> list[dict[str, Any]]:
    """The most frequent ``(status, reason)`` among sources not scored."""
    reasons: Counter[tuple[str, str]] = Counter()
    for row in table.select(["page_status", "page_error", "judge_status"]).to_pylist():
        if row["page_status"] != "ok":
            reasons[(row["page_status"], (row["page_error"] or "no message")[:120])] += 1
        elif row["judge_status"] != "scored":
            reasons[(f"judge {row['judge_status']}", "")] += 1
    return [{"status": s, "reason": r, "sources": n} for (s, r), n in reasons.most_common(top)]


def measure_coverage(
    scores: pa.Table, config: CoverageConfig, missing_policy: str = "official"
) -> dict[str, Any]:
    """Coverage overall and per system, the verdict, and a one-paragraph diagnosis.

    Args:
        scores: Scored sources (``jobs.scoring.SCORED_SOURCES_SCHEMA``).
        config: The threshold.
        missing_policy: The reduce policy, which decides how missing pages are counted.
    """
    systems = sorted(set(scores["model_name"].to_pylist()))
    per_system = {name: _counts(scores.filter(pc.equal(scores["model_name"], name))) for name in systems}
    page_status = Counter(scores["page_status"].to_pylist())
    judge_status = Counter(s or "not_judged" for s in scores["judge_status"].to_pylist())
    below = [name for name, c in per_system.items() if c["share"] < config.min_share]
    judge_errors = judge_status.get("error", 0)
    result: dict[str, Any] = {
        "complete": not below and not judge_errors and scores.num_rows > 0,
        "min_share": config.min_share,
        "overall": _counts(scores),
        "systems": per_system,
        "below_threshold": below,
        "judge_errors": judge_errors,
        "page_status": dict(sorted(page_status.items())),
        "judge_status": dict(sorted(judge_status.items())),
        "top_reasons": _reasons(scores),
        "missing_policy": missing_policy,
    }
    result["diagnosis"] = diagnosis(result)
    return result


def diagnosis(coverage: dict[str, Any]) -> str:
    """One paragraph: what is missing, why (counts by status, top reasons), and how to fix it."""
    overall = coverage["overall"]
    if coverage["complete"]:
        return (
            f"Complete: {overall['judged']} of {overall['selected']} selected sources fetched and scored "
            f"({overall['share']:.0%}); every system at or above {coverage['min_share']:.0%}."
        )
    parts = [
        f"INCOMPLETE: {overall['judged']} of {overall['selected']} selected sources ({overall['share']:.0%}) "
        f"were fetched ok and scored ({overall['fetched_ok']} fetched ok)."
    ]
    if coverage["below_threshold"]:
        shares = ", ".join(f"{n} {coverage['systems'][n]['share']:.0%}" for n in coverage["below_threshold"])
        parts.append(
            f"Below the {coverage['min_share']:.0%} required of every system (coverage.min_share): {shares}."
        )
    failed = {s: n for s, n in coverage["page_status"].items() if s != "ok"}
    if failed:
        parts.append("Pages by status: " + ", ".join(f"{s} {n}" for s, n in failed.items()) + ".")
    unjudged = {s: n for s, n in coverage["judge_status"].items() if s not in ("scored", "not_judged")}
    if unjudged:
        parts.append("Judgments by status: " + ", ".join(f"{s} {n}" for s, n in unjudged.items()) + ".")
    if coverage["judge_errors"]:
        parts.append(f"{coverage['judge_errors']} judgments failed with error, which always fails an audit.")
    if coverage["top_reasons"]:
        reasons = "; ".join(
            f"{r['status']} x{r['sources']}" + (f" ({r['reason']})" if r["reason"] else "")
            for r in coverage["top_reasons"]
        )
        parts.append(f"Top reasons: {reasons}.")
    fixes = [FIXES[key] for key in _fix_keys(coverage) if key in FIXES]
    if fixes:
        parts.append("To fix: " + "; ".join(fixes) + ".")
    counted = (
        "are left out of the aggregates (reduce policy complete)"
        if coverage.get("missing_policy") == "complete"
        else "count 0 in the weighted scores (the official policy)"
    )
    parts.append(f"Missing pages {counted}; the leaderboard and report were written, stamped incomplete.")
    return " ".join(parts)


def _fix_keys(coverage: dict[str, Any]) -> list[str]:
    """Failure kinds in order of how many sources they cost."""
    kinds: Counter[str] = Counter()
    for status, n in coverage["page_status"].items():
        if status != "ok":
            kinds[status] += n
    for status, n in coverage["judge_status"].items():
        if status == "error":
            kinds["judge_error"] += n
        elif status in ("unscorable", "partial"):
            kinds["unscorable"] += n
    return [kind for kind, _ in kinds.most_common()]
