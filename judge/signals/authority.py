"""Domain authority from a reference list of rated domains, TLD rules, and a name prior.

Order of evidence: institutional suffixes (.gov, .edu, .mil, .ac.<cc>, ...) score 5 as the rubric
demands; a domain (or its parent) on the reference list maps its quality score to 1-5; any other
domain gets a prior estimated from character n-grams of the listed domains' names, squeezed to
2-4 ("unknown site" territory), since a name alone is weak evidence.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from crawler.base import InputError

#: Labels that make a host institutional wherever they sit in its public suffix.
_INSTITUTIONAL_LABELS = {"gov", "edu", "mil"}
#: (quality threshold, score) for listed domains, highest first.
_BANDS = ((0.75, 5), (0.55, 4), (0.40, 3), (0.25, 2), (0.0, 1))
_NGRAM = 4


def is_institutional(host: str) -> bool:
    """True for government, military, education and intergovernmental hosts (score 5 by rule)."""
    labels = host.lower().strip(".").split(".")
    if len(labels) < 2:
        return False
    if labels[-1] in _INSTITUTIONAL_LABELS or labels[-1] == "int":
        return True
    second_level = _INSTITUTIONAL_LABELS | {"ac", "gc", "gouv", "gob", "govt"}
    return len(labels) >= 3 and labels[-2] in second_level and len(labels[-1]) == 2


def _ngrams(name: str) -> set[str]:
    padded = f"^{name}$"
    return {padded[i : i + _NGRAM] for i in range(len(padded) - _NGRAM + 1)}


def _stem(domain: str) -> str:
    """The name the prior reads: the domain without ``www.``; the TLD stays (it carries signal)."""
    return domain.lower().strip(".").removeprefix("www.")


@dataclass(frozen=True)
class AuthorityScore:
    score: int
    quality: float
    """The underlying 0-1 estimate (list value, 1.0 for institutional hosts, or the name prior)."""
    source: str
    """institutional | listed | name_prior"""

    def justification(self, host: str) -> str:
        if self.source == "institutional":
            return f"{host} is a government/education domain (scored 5 by rule)."
        if self.source == "listed":
            return f"{host} has quality {self.quality:.2f} on the reference domain list."
        return f"{host} is not on the reference list; name-based prior {self.quality:.2f}."


class DomainAuthority:
    """Authority scores from a ``domain,pc1`` reference list."""

    def __init__(self, quality: dict[str, float]):
        self.quality = dict(quality)
        sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for domain, value in self.quality.items():
            for gram in _ngrams(_stem(domain)):
                sums[gram][0] += value
                sums[gram][1] += 1
        self._gram_mean = {g: (s, n) for g, (s, n) in sums.items()}
        self._overall = sum(self.quality.values()) / len(self.quality) if self.quality else 0.5

    @classmethod
    def from_csv(cls, path: str | Path, exclude: Iterable[str] = ()) -> DomainAuthority:
        """Load a reference list; ``exclude`` drops domains (used to hold out a test fold).

        Raises:
            InputError: naming the file, line and field of a bad row.
        """
        skip = set(exclude)
        quality: dict[str, float] = {}
        with open(path, newline="") as handle:
            reader = csv.DictReader(handle)
            if not reader.fieldnames or not {"domain", "pc1"} <= set(reader.fieldnames):
                raise InputError(str(path), "expected columns domain,pc1", line=1)
            for line, row in enumerate(reader, start=2):
                try:
                    value = float(row["pc1"])
                except (TypeError, ValueError):
                    raise InputError(
                        str(path), f"not a number: {row['pc1']!r}", line=line, field="pc1"
                    ) from None
                domain = (row["domain"] or "").strip().lower()
                if not domain:
                    raise InputError(str(path), "empty domain", line=line, field="domain")
                if domain not in skip:
                    quality[domain] = value
        return cls(quality)

    def lookup(self, host: str) -> float | None:
        """Quality of the host or its closest listed parent domain (``www.bbc.co.uk`` -> ``bbc.co.uk``)."""
        labels = host.lower().strip(".").split(".")
        for i in range(len(labels) - 1):
            value = self.quality.get(".".join(labels[i:]))
            if value is not None:
                return value
        return None

    def name_prior(self, host: str) -> float:
        """Mean quality of listed domains sharing character 4-grams with the name, shrunk to the mean."""
        name = _stem(host)
        total, count = 0.0, 0.0
        for gram in _ngrams(name):
            s, n = self._gram_mean.get(gram, (0.0, 0.0))
            if n:
                total += s / n
                count += 1
        shrink = 3.0  # pseudo-count toward the overall mean
        return (total + shrink * self._overall) / (count + shrink)

    def score(self, host: str) -> AuthorityScore:
        if is_institutional(host):
            return AuthorityScore(5, 1.0, "institutional")
        listed = self.lookup(host)
        if listed is not None:
            return AuthorityScore(next(s for t, s in _BANDS if listed >= t), listed, "listed")
        prior = self.name_prior(host)
        band = 4 if prior >= 0.62 else 3 if prior >= 0.50 else 2
        return AuthorityScore(band, prior, "name_prior")
