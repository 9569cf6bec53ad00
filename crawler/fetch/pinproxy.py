"""The proxy every Chromium connection of a render goes through: resolve once, check, connect to that address.

Chromium resolves names itself, so a check made before it connects (Playwright route interception)
can be outrun: a host may resolve to a public address for the check and to a private one for
Chromium (DNS rebinding), and Chromium resolves ``localhost`` to ``::1`` as well as ``127.0.0.1``
without asking the system resolver. Launched with ``--proxy-server`` pointing here (and
``<-loopback>`` removed from its implicit bypass list), Chromium resolves nothing: it hands every
host name to this proxy, which resolves it once, refuses it when the SSRF policy refuses any of
its addresses, and opens the connection to one of exactly those checked addresses. HTTPS and
WebSockets come as ``CONNECT`` tunnels; plain HTTP as absolute-form requests, forwarded with
``Connection: close`` both ways, so that one client connection never carries a request to a second host.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from crawler.netguard import AddressPolicy, BlockedAddress, is_ip_literal

_HOP_BY_HOP = (b"connection:", b"proxy-connection:", b"keep-alive:", b"proxy-authorization:")


class PinningProxy:
    """A loopback HTTP proxy for Chromium that connects only to addresses the policy allows.

    The listening socket is bound at construction (so Chromium's flags can name its port before the
    event loop runs); ``start()`` serves it on the running loop.

    Args:
        policy: The crawl's SSRF policy.
    """

    def __init__(self, policy: AddressPolicy):
        self.policy = policy
        self.blocked: list[str] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(256)
        self._sock.setblocking(False)
        self.port: int = self._sock.getsockname()[1]
        self._server: asyncio.AbstractServer | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> PinningProxy:
        return self  # Scrapy deep-copies settings; the shard keeps this instance (and its port)

    @property
    def chromium_flags(self) -> list[str]:
        """Flags that send every Chromium connection here (no direct UDP: QUIC and WebRTC off)."""
        return [
            f"--proxy-server=http://127.0.0.1:{self.port}",
            "--proxy-bypass-list=<-loopback>",  # Chromium would otherwise connect to loopback directly
            "--disable-quic",
            "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        ]

    async def start(self) -> None:
        """Serve on the running event loop (idempotent)."""
        if self._server is None:
            self._server = await asyncio.start_server(self._serve, sock=self._sock)

    async def _connect(self, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Resolve ``host`` once, check every address, connect to the first that answers."""
        host = host.strip("[]")
        if is_ip_literal(host):
            addresses = [host]
        else:
            try:
                infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError:
                infos = []
            addresses = list(dict.fromkeys(info[4][0] for info in infos))
        if not addresses:
            raise OSError(f"{host} did not resolve")  # a failure (502), not a refusal
        self.policy.check_addresses(host, addresses)  # raises BlockedAddress
        error: OSError = OSError(f"cannot connect to {host}:{port}")
        for address in addresses:
            try:
                return await asyncio.open_connection(address, port)
            except OSError as exc:
                error = exc
        raise error

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        target = "?"
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            line, _, rest = head.partition(b"\r\n")
            method, target, version = line.decode("latin-1").split(" ", 2)
            if method == "CONNECT":
                host, _, port = target.rpartition(":")
                up_reader, up_writer = await self._connect(host, int(port))
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                parts = urlsplit(target)
                if parts.scheme != "http" or not parts.hostname:
                    raise ValueError(f"not an absolute http URL: {target!r}")
                up_reader, up_writer = await self._connect(parts.hostname, parts.port or 80)
                headers = [h for h in rest.split(b"\r\n") if h and not h.lower().startswith(_HOP_BY_HOP)]
                origin_form = urlunsplit(("", "", parts.path or "/", parts.query, ""))
                request_line = f"{method} {origin_form} {version}".encode("latin-1")
                up_writer.write(b"\r\n".join([request_line, *headers, b"Connection: close", b"", b""]))
                await up_writer.drain()
                await _close_after_response(up_reader, writer)
        except BlockedAddress as exc:
            self.blocked.append(target)
            await _answer(writer, b"403 Forbidden", str(exc))
            return
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            await _answer(writer, b"502 Bad Gateway", f"{type(exc).__name__}: {exc}")
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _close_after_response(up_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Pass the response head on with ``Connection: close``: the client then opens a new connection
    (through the proxy, checked again) for its next request, whatever host that is for."""
    head = await up_reader.readuntil(b"\r\n\r\n")
    lines = [h for h in head.split(b"\r\n") if h and not h.lower().startswith(_HOP_BY_HOP)]
    writer.write(b"\r\n".join([*lines, b"Connection: close", b"", b""]))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until end of stream, then close the other side."""
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def _answer(writer: asyncio.StreamWriter, status: bytes, reason: str) -> None:
    body = reason.encode("utf-8", "replace")
    head = b"HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
    writer.write(head % (status, len(body)) + body)
    with contextlib.suppress(ConnectionError, OSError):
        await writer.drain()
    writer.close()
