"""The one Retry-After reading shared by the crawler, the judge and the collectors."""

from __future__ import annotations

import pytest

from crawler.retry import retry_after

NOW = 1_445_412_480.0  # Wed, 21 Oct 2015 07:28:00 GMT


@pytest.mark.parametrize(
    "value,millis,expected",
    [
        ("3", None, 3.0),
        (b"3", None, 3.0),
        (" 7 ", None, 7.0),
        ("1.5", None, 1.5),
        ("9", "250", 0.25),
        ("9", "soon", 9.0),  # an unusable retry-after-ms falls back to Retry-After
        ("Wed, 21 Oct 2015 07:28:30 GMT", None, 30.0),
        ("Wed, 21 Oct 2015 07:27:00 GMT", None, 0.0),  # a date in the past: retry now
        (None, None, None),
        ("", None, None),
        ("soon", None, None),
        ("-5", None, None),
        ("nan", None, None),
        ("inf", None, None),
        ("Wed, 99 Foo 2015", None, None),
        (b"\xff\xfe", None, None),
    ],
)
def test_retry_after(value, millis, expected):
    assert retry_after(value, millis=millis, now=NOW) == expected


def test_every_copy_is_gone():
    """The crawler, the collectors and the judge read the hint through crawler.retry only."""
    import crawler.fetch.middlewares as middlewares
    import jobs.collectors.client as client
    import judge.engines.openai_http as openai_http

    for module in (middlewares, client, openai_http):
        assert module.retry_after is retry_after
        assert not hasattr(module, "retry_after_seconds") and not hasattr(module, "_retry_after")
