"""bench/judge.py --rank-file: a tiktoken rank file becomes a tokenizer that cuts text as tiktoken does."""

from __future__ import annotations

import base64
import unicodedata
from collections import Counter

import pytest

tiktoken = pytest.importorskip("tiktoken")

from tests.support.tiny_model import QWEN_SPLIT, SPECIAL_TOKENS, qwen_tokenizer  # noqa: E402

TEXTS = [
    "Published on January 25, 2026; last updated 2025-12-01. Café, naïve, Ünïcödé (NFC: e\u0301).",
    '{"semantic_relevance": {"score": 4, "justification": "Answers the query with minor gaps."}}',
    "Die Straße 12345\n\n  indented\tline  — it's we'll they're 3.14159 ¡Hola! 東京 2026年",
]


def _rank_file(path, corpus: list[str], merges: int = 300):
    """A small byte-level BPE rank file (tiktoken's format) learned greedily from ``corpus``."""
    ranks = {bytes([b]): b for b in range(256)}
    words = [[bytes([b]) for b in w.encode()] for t in corpus for w in t.split(" ")]
    for _ in range(merges):
        pairs = Counter((a, b) for w in words for a, b in zip(w, w[1:], strict=False))
        if not pairs:
            break
        (a, b), _count = pairs.most_common(1)[0]
        ranks[a + b] = len(ranks)
        for i, w in enumerate(words):
            out, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    out.append(a + b)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in ranks.items()))
    return path, ranks


def test_qwen_tokenizer_cuts_text_as_tiktoken_does(tmp_path):
    path, ranks = _rank_file(tmp_path / "ranks.tiktoken", TEXTS * 3)
    reference = tiktoken.Encoding("t", pat_str=QWEN_SPLIT, mergeable_ranks=ranks, special_tokens={})
    tokenizer = qwen_tokenizer(path)
    for text in TEXTS:
        assert tokenizer.encode(text).ids == reference.encode(unicodedata.normalize("NFC", text))
        assert tokenizer.decode(tokenizer.encode(text).ids) == unicodedata.normalize("NFC", text)
    # The ChatML special tokens follow the regular ones, each one token.
    assert [tokenizer.token_to_id(t) for t in SPECIAL_TOKENS] == list(range(len(ranks), len(ranks) + 3))
    assert tokenizer.encode("<|im_start|>user").ids[0] == len(ranks) + 1
