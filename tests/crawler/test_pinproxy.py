"""The render proxy on its own: it forwards to checked addresses only, and refuses the rest (no browser)."""

from __future__ import annotations

import asyncio

from crawler.fetch.pinproxy import PinningProxy
from crawler.netguard import AddressPolicy
from tests.crawler.conftest import WEB_HOSTS

A = WEB_HOSTS[0]


async def _through(proxy: PinningProxy, request: bytes) -> bytes:
    await proxy.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(request)
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    answer = head + await asyncio.wait_for(reader.readexactly(length), 10)
    writer.close()
    return answer


def _ask(request: str) -> tuple[bytes, PinningProxy]:
    proxy = PinningProxy(AddressPolicy(allowlist=tuple(WEB_HOSTS)))
    return asyncio.run(_through(proxy, request.encode())), proxy


def test_an_allowed_host_is_forwarded_with_connection_close(web):
    answer, proxy = _ask(f"GET {web.url(A, '/article/proxied')} HTTP/1.1\r\nHost: {A}\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200") and b"/article/proxied" in answer
    assert b"\r\nConnection: close\r\n" in answer  # the next request opens a new, checked connection
    assert proxy.blocked == [] and web.hits[(A, "/article/proxied")] == 1


def test_refused_addresses_are_never_connected_to(web):
    probe = web.url(web.probe_host, "/secret")
    answer, proxy = _ask(f"GET {probe} HTTP/1.1\r\nHost: {web.probe_host}\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 403") and b"non-public range" in answer and proxy.blocked == [probe]
    tunnel, proxy = _ask(f"CONNECT localhost:{web.port} HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert tunnel.startswith(b"HTTP/1.1 403") and proxy.blocked == [f"localhost:{web.port}"]
    assert web.hits[(web.probe_host, "/secret")] == 0
