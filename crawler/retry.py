"""The one reading of a server's ``Retry-After`` hint, shared by the crawler, the judge and the collectors."""

from __future__ import annotations

import email.utils
import math
import time
from datetime import UTC


def retry_after(
    value: bytes | str | None, *, millis: bytes | str | None = None, now: float | None = None
) -> float | None:
    """Seconds a server asks a client to wait, or None when it gives no usable hint.

    Args:
        value: The ``Retry-After`` header: delta-seconds, or an HTTP date (a date in the past is 0).
        millis: OpenAI's ``retry-after-ms`` header, which wins when it is a number.
        now: The current time (seconds since the epoch), for tests.

    Anything else (``soon``, a negative or non-finite number, a malformed date) is no hint: the
    caller falls back to its own backoff instead of failing.
    """
    if millis:
        wait = _seconds(millis)
        if wait is not None:
            return wait / 1000
    if not value:
        return None
    wait = _seconds(value)
    if wait is not None:
        return wait
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    try:
        when = email.utils.parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _seconds(value: bytes | str) -> float | None:
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    try:
        number = float(text.strip())
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None
