"""Mapping of every way a fetch can fail to one terminal page status."""

from __future__ import annotations

import asyncio

from scrapy.exceptions import DownloadCancelledError, DownloadTimeoutError, IgnoreRequest
from twisted.internet import error as twisted_error


class FetchFailure(IgnoreRequest):
    """A fetch that ended with a known terminal status (raised by our middlewares).

    Args:
        status: One of PAGE_STATUSES.
        message: The human-readable reason stored in the page record's ``error``.
    """

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status, self.message = status, message


class RedirectDeferred(IgnoreRequest):
    """A redirect to a host outside the shard, left to the next round (``politeness.cross_host_redirects``).

    Args:
        target: The redirect's target (credentials stripped).
        via: The hops followed before it, the cited URL first.
    """

    def __init__(self, target: str, via: list[str]):
        super().__init__(f"redirect to {target} deferred to the next round")
        self.target, self.via = target, via


class LeftForLater(IgnoreRequest):
    """A request the shard process stopped before sending: its wall limit (``shard_timeout_s``) came.

    The URL gets no record, so the next process of the shard fetches it (``crawler.runner``).
    """

    def __init__(self) -> None:
        super().__init__("the shard process reached its time limit before sending this request")


TIMEOUT_ERRORS = (
    DownloadTimeoutError,
    twisted_error.TimeoutError,
    twisted_error.TCPTimedOutError,
    asyncio.TimeoutError,
    TimeoutError,
)


def failure_status(exc: BaseException) -> tuple[str, str]:
    """(status, error message) of an exception that ended a request."""
    if isinstance(exc, FetchFailure):
        return exc.status, exc.message
    name = type(exc).__name__
    text = str(exc) or name
    if isinstance(exc, TIMEOUT_ERRORS) or "Timeout" in name:
        return "timeout", f"timed out: {text}"[:500]
    if isinstance(exc, DownloadCancelledError):  # the download handler cancels only over the size cap
        return "too_large", f"body larger than the size cap ({text})"[:500]
    if isinstance(exc, IgnoreRequest):
        return "error", text[:500]
    return "error", f"{name}: {text}"[:500]


def is_transient(exc: BaseException) -> bool:
    """Connection-level failures worth a retry (the server may answer next time)."""
    if isinstance(exc, FetchFailure):
        return False
    if isinstance(exc, TIMEOUT_ERRORS):
        return True
    name = type(exc).__name__
    return any(
        word in name
        for word in ("ConnectionLost", "ConnectionRefused", "ConnectionDone", "ResponseFailed", "DataLoss",
                     "ConnectError", "ConnectionReset", "ResponseNeverReceived", "DownloadFailed")
    )  # fmt: skip
