"""The SourceBench rubric: 8 dimensions in 3 stages, their weights, and the weighted-total formula.

Defined once here and used by the prompts, the parser, the reduce weights and the reports.
"""

from __future__ import annotations

from dataclasses import dataclass

RUBRIC_VERSION = "sb-rubric-2"

#: Stages in request order; each stage is one judge request per (page, query).
STAGES = ("content", "meta", "layout")


@dataclass(frozen=True)
class Dimension:
    """One scored dimension of a cited page."""

    key: str
    """Column name, as in the official ``content_vector``."""
    code: str
    """The paper's two-letter abbreviation."""
    label: str
    """Human-readable name for reports."""
    stage: str
    """Which stage prompt scores it (one of ``STAGES``)."""
    weight: int
    """Weight in the weighted total (3 for content dimensions, 2 otherwise)."""
    question: str = ""
    """What the dimension asks of a page, in one sentence (used in the prompts)."""
    levels: tuple[str, ...] = ()
    """What each score means, for scores 5, 4, 3, 2, 1 in that order."""
    guidance: str = ""
    """Extra instructions for the judge on this dimension (empty when none)."""

    def level(self, score: int) -> str:
        """The description of one score (1-5)."""
        return self.levels[SCORE_MAX - score]


#: In the official ``SCORE_KEYS`` order (compute_metrics.py), which the output columns follow.
DIMENSIONS: tuple[Dimension, ...] = (
    Dimension(
        "semantic_relevance",
        "CR",
        "Semantic relevance",
        "content",
        3,
        "How directly and completely does the page answer what the user asked?",
        (
            "It answers the question head-on and in full.",
            "It answers the question but leaves small gaps.",
            "It is about the topic yet does not address what the user actually wants.",
            "It only shares keywords with the question.",
            "It is unrelated, in a language the user did not ask in, or broken.",
        ),
        "Very short text (under about 300 characters) scores low unless it is a precise factual answer.",
    ),
    Dimension(
        "factual_accuracy",
        "FA",
        "Factual accuracy",
        "content",
        3,
        "How well supported are the page's claims?",
        (
            "Claims rest on primary evidence: government, academic or scientific sources.",
            "Claims agree with expert consensus and cite secondary sources.",
            "Claims are plausible but given without support.",
            "Claims are fringe or the reasoning has gaps.",
            "Claims are false, dangerous or already debunked.",
        ),
    ),
    Dimension(
        "freshness",
        "FR",
        "Freshness",
        "meta",
        2,
        "Is the information current relative to today's date?",
        (
            "Published or updated within the last 12 months.",
            "Published or updated one to two years ago.",
            "No date, but the content is evergreen.",
            "Clearly out of date.",
            "So old that its age makes it wrong.",
        ),
        "Prefer the last-updated date, then the publication date, then dates mentioned in the text; "
        "an old page that was updated recently counts as current.",
    ),
    Dimension(
        "objectivity_tone",
        "NE",
        "Objectivity / tone",
        "content",
        3,
        "Is the writing neutral and fair to the evidence?",
        (
            "Neutral, scholarly, presents several viewpoints.",
            "Balanced, professional journalism.",
            "Opinionated but grounded in facts.",
            "Inflammatory or written to provoke emotion.",
            "Propaganda, hateful or incoherent.",
        ),
    ),
    Dimension(
        "layout_ad_density",
        "LC",
        "Layout / ad density",
        "layout",
        2,
        "Can a reader get to the content without ads and clutter in the way?",
        (
            "Clean, with no intrusive advertising.",
            "Ordinary banner ads that do not get in the way.",
            "Cluttered: autoplay media, sticky ad units, heavy monetisation.",
            "Obstructive: pop-ups, walls of sponsored 'chumbox' links.",
            "Unusable: overlays, forced redirects or malicious behaviour.",
        ),
        "Judge from the text and the layout signals: 'ADVERTISEMENT' labels, text broken into fragments "
        "and repeated affiliate calls to action are evidence of clutter.",
    ),
    Dimension(
        "accountability",
        "AA",
        "Author accountability",
        "meta",
        2,
        "Who wrote the page, and can they be held to it?",
        (
            "A named author with stated expertise or credentials.",
            "A named author or staff writer, or a reputable organisation as author.",
            "A generic byline such as 'admin' or 'editorial team'.",
            "No author although this kind of page should have one.",
            "A fake or invented persona.",
        ),
    ),
    Dimension(
        "transparency",
        "OA",
        "Ownership transparency",
        "meta",
        2,
        "Does the site disclose who owns and runs it?",
        (
            "Postal address, phone, and leadership or funding are disclosed.",
            "A clear About page with names, but no contact details.",
            "Only a contact form or a vague About page.",
            "No ownership information at all.",
            "Ownership is deliberately hidden.",
        ),
        "Information that is missing counts against the page.",
    ),
    Dimension(
        "authority",
        "DA",
        "Domain authority",
        "meta",
        2,
        "How trustworthy is the website (the domain) as a source?",
        (
            "Government or education domain, major news outlet, or long-established brand.",
            "An established commercial site or a recognised niche expert.",
            "An unknown small site.",
            "A content farm, parasite SEO or clickbait site.",
            "A scam, phishing or disinformation site.",
        ),
        ".gov and .edu domains always score 5.",
    ),
)

DIMENSION_KEYS: tuple[str, ...] = tuple(d.key for d in DIMENSIONS)
WEIGHTS: dict[str, int] = {d.key: d.weight for d in DIMENSIONS}
#: The official scale factor: sum of weights is 19, so a page scored 5 everywhere gives 95 x 100/95 = 100.
WEIGHTED_SCALE = 100.0 / 95.0
SCORE_MIN, SCORE_MAX = 1, 5


def stage_dimensions(stage: str) -> tuple[Dimension, ...]:
    """The dimensions one stage prompt scores, in output order."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; expected one of {STAGES}")
    return tuple(d for d in DIMENSIONS if d.stage == stage)
