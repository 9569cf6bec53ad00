"""A loopback web of several hosts (127.0.0.x) serving normal and faulty pages, for tests and bench.

A small HTTP/1.1 server on asyncio streams (keep-alive, no framework), so that it can misbehave
on purpose: hang, reset the connection, lie about the charset, send a gzip bomb. Every host
serves the same routes; ``hits`` counts requests per (host, path), and ``in_flight``/``max_in_flight``
count the requests being answered at each host (from the request line read to the response drained):
what a politeness limit looks like from the server's side. Run as a script for the bench:
``python tests/crawler/loopweb.py --hosts 127.0.0.2,... --port P --latency 0.2 --pages DIR``.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import socket
import struct
import threading
import time
import zlib
from collections import Counter
from pathlib import Path

ARTICLE = (
    "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
    "<meta name='author' content='Jane Doe'>"
    '<script type=\'application/ld+json\'>{{"@type":"NewsArticle","datePublished":"2025-06-01",'
    '"author":{{"@type":"Person","name":"Jane Doe"}},"publisher":{{"@type":"Organization",'
    '"name":"Loop News"}}}}</script></head><body><nav><a href=\'/about\'>About us</a> '
    "<a href='/contact'>Contact</a></nav><article><h1>{title}</h1>{paragraphs}</article>"
    "<footer>Advertisement</footer></body></html>"
)
SENTENCE = "The river valley holds {n} kinds of birds that migrate every spring across the hills. "

JS_ONLY = (
    "<!doctype html><html><head><title>JS app</title></head><body><div id='root'></div><script>"
    "const p=document.createElement('p');p.textContent='{text}';"
    "document.getElementById('root').appendChild(p);"
    "fetch('{probe}').then(r=>r.text()).then(t=>{{const s=document.createElement('p');"
    "s.textContent='PROBE:'+t;document.body.appendChild(s);}})"
    ".catch(()=>{{const s=document.createElement('p');s.textContent='PROBE-BLOCKED';"
    "document.body.appendChild(s);}});</script></body></html>"
)
#: Loads normally, then its script keeps the renderer busy for ever: the snapshot never answers.
JS_BUSY = (
    "<!doctype html><html><head><title>Busy app</title></head><body>"
    "<p>Loading the busy application, please wait a moment.</p>"
    "<script>window.addEventListener('load',()=>setTimeout(()=>{for(;;){}},50));</script></body></html>"
)
#: Shows what ``http://localhost:<port>/`` answered (Chromium resolves localhost to ::1 and 127.0.0.1).
JS_LOCALHOST = (
    "<!doctype html><html><head><title>Localhost probe</title></head><body><p>{text}</p>"
    "<iframe src='http://localhost:{port}/frame'></iframe><script>"
    "fetch('http://localhost:{port}/').then(r=>r.text()).then(t=>{{const s=document.createElement('p');"
    "s.textContent='LOCALHOST:'+t;document.body.appendChild(s);}})"
    ".catch(()=>{{const s=document.createElement('p');s.textContent='LOCALHOST-BLOCKED';"
    "document.body.appendChild(s);}});</script></body></html>"
)
JS_TEXT = (
    "Rendered by JavaScript: this paragraph only exists after the script ran in a real browser engine. " * 3
)


def article(title: str, words: int = 60) -> bytes:
    paragraphs = "".join(f"<p>{SENTENCE.format(n=i) * 3}</p>" for i in range(max(1, words // 30)))
    return ARTICLE.format(title=title, paragraphs=paragraphs).encode()


def tiny_pdf(text: str) -> bytes:
    """A valid one-page PDF showing ``text`` (Helvetica), built by hand with a correct xref table."""
    stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Title (Loopback PDF) /Author (Ada Lovelace) /CreationDate (D:20240315120000Z) >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def gzip_bomb(size: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\0" * (1 << 20)
    data = [compressor.compress(chunk) for _ in range(size >> 20)]
    return b"".join(data) + compressor.flush()


class LoopbackWeb:
    """The server: ``start()`` binds every host on one port in a background thread.

    Args:
        hosts: Loopback addresses to serve, e.g. ``["127.0.0.2", "127.0.0.3"]``.
        port: The port, the same on every host (0 = pick one that is free on all of them).
        latency_s: Delay before every response (the bench's injected latency).
        pages: Bodies served at ``/page/<n>`` (cycled); default synthetic articles.
        probe_host: Host the JS page's ``fetch()`` probes (a loopback host the crawl must refuse).
        crawl_delays: robots.txt ``Crawl-delay`` (seconds) announced by some hosts.
    """

    def __init__(
        self,
        hosts: list[str],
        port: int = 0,
        latency_s: float = 0.0,
        pages: list[bytes] | None = None,
        probe_host: str = "127.0.0.9",
        crawl_delays: dict[str, float] | None = None,
    ):
        self.hosts, self.port, self.latency_s = hosts, port, latency_s
        self.pages = pages or [article(f"Article {i}", 120) for i in range(20)]
        self.probe_host = probe_host
        self.crawl_delays = crawl_delays or {}
        self.hits: Counter[tuple[str, str]] = Counter()
        self.times: dict[tuple[str, str], list[float]] = {}  # monotonic arrival times per (host, path)
        self.authorizations: list[str] = []  # Authorization headers received (a crawl must send none)
        self.in_flight: Counter[str] = Counter()  # requests being answered now, per host
        self.max_in_flight: Counter[str] = Counter()  # the most at once, per host
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._servers: list[asyncio.AbstractServer] = []
        self._bomb = gzip_bomb(64 << 20)
        self._ready = threading.Event()
        self._error: BaseException | None = None

    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.port}{path}"

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> LoopbackWeb:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self._error:
            raise self._error
        return self

    def stop(self) -> None:
        if self._loop:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread:
            self._thread.join(10)

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._bind())
        except BaseException as exc:  # reported to start()
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()
        for server in self._servers:
            server.close()
        tasks = asyncio.all_tasks(self._loop)
        for task in tasks:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        self._loop.close()

    async def _bind(self) -> None:
        for _attempt in range(20):
            port = self.port or _free_port(self.hosts[0])
            try:
                for host in [*self.hosts, self.probe_host]:
                    server = await asyncio.start_server(
                        self._serve, host, port, reuse_address=True, backlog=1024
                    )
                    self._servers.append(server)
                self.port = port
                return
            except OSError:
                for server in self._servers:
                    server.close()
                self._servers = []
                if self.port:
                    raise
        raise OSError("no port free on all loopback hosts")

    # -- HTTP --------------------------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host = writer.get_extra_info("sockname")[0]
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
                _method, target, _version = request_line.split(" ", 2)
                path = target.split("?", 1)[0]
                self.authorizations += [
                    line.decode("latin-1")
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"authorization:")
                ]
                self.hits[(host, path)] += 1
                self.times.setdefault((host, path), []).append(time.monotonic())
                self.in_flight[host] += 1
                self.max_in_flight[host] = max(self.max_in_flight[host], self.in_flight[host])
                try:
                    if self.latency_s:
                        await asyncio.sleep(self.latency_s)
                    keep = await self._route(host, path, writer)
                    await writer.drain()
                finally:
                    self.in_flight[host] -= 1
                if not keep:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            if not writer.is_closing():
                writer.close()

    @staticmethod
    def _send(writer: asyncio.StreamWriter, status: str, body: bytes, ctype: str = "text/html; charset=utf-8",
              extra: dict[str, str] | None = None) -> bool:  # fmt: skip
        headers = {"Content-Type": ctype, "Content-Length": str(len(body)), **(extra or {})}
        lines = [f"HTTP/1.1 {status}"] + [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        return True

    def _redirect(self, writer: asyncio.StreamWriter, location: str) -> bool:
        return self._send(writer, "302 Found", b"", extra={"Location": location})

    async def _route(self, host: str, path: str, writer: asyncio.StreamWriter) -> bool:
        send, hits = self._send, self.hits[(host, path)]
        if path == "/robots.txt":
            delay = f"Crawl-delay: {self.crawl_delays[host]:g}\n" if host in self.crawl_delays else ""
            robots = f"User-agent: *\n{delay}Disallow: /private/\n".encode()
            return send(writer, "200 OK", robots, "text/plain")
        if path.startswith("/page/"):
            index = int(path.rsplit("/", 1)[-1] or 0)
            return send(writer, "200 OK", self.pages[index % len(self.pages)])
        if path.startswith(("/article", "/private/")):
            return send(writer, "200 OK", article(f"{host}{path}", 90))
        if path == "/secret":
            return send(writer, "200 OK", b"SECRET-TOKEN", "text/plain")
        if path == "/404":
            return send(writer, "404 Not Found", b"<html><body>missing</body></html>")
        if path == "/500":
            return send(writer, "500 Internal Server Error", b"<html><body>boom</body></html>")
        if path == "/flaky":  # fails once, then works: a retry succeeds
            if hits == 1:
                return send(writer, "503 Service Unavailable", b"busy")
            return send(writer, "200 OK", article("Flaky but fine", 90))
        if path == "/recovers":  # down for longer than one run's retries, then back
            if hits <= 2:
                return send(writer, "503 Service Unavailable", b"down for maintenance")
            return send(writer, "200 OK", article("Back after maintenance", 90))
        if path == "/429":  # rate limited once with Retry-After: 1
            if hits == 1:
                return send(writer, "429 Too Many Requests", b"slow down", "text/plain", {"Retry-After": "1"})
            return send(writer, "200 OK", article("After the rate limit", 90))
        if path == "/429-long":
            return send(
                writer, "429 Too Many Requests", b"come back tomorrow", "text/plain", {"Retry-After": "86400"}
            )
        if path == "/slow":
            await asyncio.sleep(1.0)
            return send(writer, "200 OK", article("Slow but fine", 90))
        if path == "/hang":
            await asyncio.sleep(3600)
            return False
        if path == "/reset":
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return False
        if path in ("/loop-a", "/loop-b"):
            return self._redirect(writer, "/loop-b" if path == "/loop-a" else "/loop-a")
        if path.startswith("/to/"):  # /to/<host>/<path>: a redirect to that host (a link shortener)
            _, _, target_host, rest = path.split("/", 3)
            return self._redirect(writer, f"http://{target_host}:{self.port}/{rest}")
        if path == "/redirect-ok":
            return self._redirect(writer, "/article/landed")
        if path == "/redirect-metadata":
            return self._redirect(writer, "http://169.254.169.254/latest/meta-data/")
        if path == "/redirect-private":
            return self._redirect(writer, "http://10.0.0.1/admin")
        if path == "/redirect-credentials":
            return self._redirect(writer, f"http://user:hunter2@{host}:{self.port}/article/after-credentials")
        if path == "/redirect-probe":
            return self._redirect(writer, f"http://{self.probe_host}:{self.port}/secret")
        if path == "/gzip-bomb":
            return send(writer, "200 OK", self._bomb, extra={"Content-Encoding": "gzip"})
        if path == "/oversize":
            return send(writer, "200 OK", b"<html><body>" + b"<p>big page</p>" * 600_000 + b"</body></html>")
        if path == "/oversize-chunked":  # no Content-Length: the cap must stop the stream itself
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = b"<p>" + b"x" * 65536 + b"</p>"
            for _ in range(200):
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            return True
        if path == "/wrong-charset":  # UTF-8 bytes declared as ISO-8859-1
            body = article("Café Zürich naïve façade", 90).replace(b"<meta charset='utf-8'>", b"")
            return send(writer, "200 OK", body, "text/html; charset=iso-8859-1")
        if path == "/binary":
            return send(writer, "200 OK", bytes(range(256)) * 64, "application/octet-stream")
        if path == "/image.png":
            return send(writer, "200 OK", b"\x89PNG\r\n\x1a\n" + b"\0" * 2000, "image/png")
        if path == "/binary-as-html":
            return send(writer, "200 OK", b"\0\1\2\3" * 1000, "text/html")
        if path == "/doc.pdf":
            return send(
                writer, "200 OK", tiny_pdf("Hello from a loopback PDF about river birds"), "application/pdf"
            )
        if path == "/notes.txt":
            return send(writer, "200 OK", ("Plain notes about migrating birds. " * 10).encode(), "text/plain")
        if path == "/thin":
            return send(writer, "200 OK", b"<html><body><p>Hi</p></body></html>")
        if path == "/js-busy":
            return send(writer, "200 OK", JS_BUSY.encode())
        if path.startswith("/js-localhost/"):
            port = int(path.rsplit("/", 1)[-1])
            return send(writer, "200 OK", JS_LOCALHOST.format(text=JS_TEXT, port=port).encode())
        if path == "/js-only":
            probe = f"http://{self.probe_host}:{self.port}/secret"
            return send(writer, "200 OK", JS_ONLY.format(text=JS_TEXT, probe=probe).encode())
        return send(writer, "404 Not Found", b"<html><body>no such route</body></html>")


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def load_pages(folders: list[str]) -> list[bytes]:
    """Decompressed ``*.gz`` pages from folders (the shared reference pages)."""
    return [gzip.decompress(p.read_bytes()) for folder in folders for p in sorted(Path(folder).glob("*.gz"))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hosts", required=True, help="comma-separated loopback addresses")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--pages", action="append", default=[], help="folder of *.gz pages for /page/<n>")
    args = parser.parse_args()
    web = LoopbackWeb(args.hosts.split(","), args.port, args.latency, load_pages(args.pages) or None).start()
    print(f"READY {web.port}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
