"""bench/adversarial.py on real shared pages: no attack gains under the signals judge, every one is flagged,
and the prompt fence holds (the bench itself runs more pages and the false-flag pass)."""

from __future__ import annotations

import pytest

from bench.adversarial import ATTACKS, run_attacks, shared_pages


@pytest.mark.slow
def test_no_attack_gains_and_every_attack_is_flagged(shared_data):
    every = list(shared_pages())
    pages = every[:: len(every) // 3][:3]  # one page of each shared set
    results = run_attacks(pages, relevance="overlap")
    assert len(results) == len(ATTACKS) >= 12
    gains = {kind: row["max_gain"] for kind, row in results.items() if row["max_gain"] > 0}
    assert not gains
    unflagged = {kind: row["flagged"] for kind, row in results.items() if row["flagged"] < 1}
    assert not unflagged
    assert all(row["fence_held"] == 1 for row in results.values())
    hidden = ("display_none", "font_size_zero", "white_on_white", "stylesheet_class", "noscript_text")
    assert all(results[kind]["reaches_prompt"] == 0 for kind in hidden)  # hidden text never reaches an LLM
