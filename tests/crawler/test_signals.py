"""crawler.signals: the shortcuts give the answers of the patterns they stand for."""

from __future__ import annotations

import gzip
import re

from crawler.signals import _has_phone

#: The phone number pattern ``_has_phone`` answers for, searched whole.
PHONE = re.compile(r"(?:\+\d{1,3}[\s.-]?)?\(?\d{2,4}\)?[\s.-]\d{3,4}[\s.-]\d{3,4}\b")


def test_phone_shortcut_answers_as_the_whole_pattern(shared_data):
    from resiliparse.extract.html2text import extract_plain_text

    texts = [
        "call 555 123 4567", "(02) 1234 5678", "1 234 5678", "x12)-123-4567", "12 3456 7890x",
        "\u0661\u0662 \u0663\u0664\u0665 \u0666\u0667\u0668\u0669", "\u00b23 456 7890", "+44 20 7946 0958",
        "2019 123 456", "no digits here", "12-3456-789", "1 2 3",
    ]  # fmt: skip
    for path in sorted((shared_data / "pages" / "trafilatura" / "html").glob("*.gz")):
        html = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
        texts.append(extract_plain_text(html, alt_texts=False, list_bullets=False) or "")
    answers = [_has_phone(text) for text in texts]
    assert answers == [bool(PHONE.search(text)) for text in texts]
    assert 0 < sum(answers) < len(answers)
