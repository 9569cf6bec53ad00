"""Rebuild the bundled offline demo: a WARC of real pages, demo queries and simulated citation bundles.

Run from the repository root::

    .venv/bin/python -m jobs.demo.build_demo [--data ../shared/data] [--out jobs/demo]

The output is byte-for-byte reproducible: WARC dates and record ids are fixed (ids are UUIDv5 of the
URL), and pages are written in a fixed order. The pages are real pages from ../shared/data (see
``jobs/demo/README.md`` for their sources and licences); they are archived under their ORIGINAL URLs,
so the crawler's WARC replay serves them exactly as a live crawl of those URLs would have.

Besides the real pages the archive holds two synthetic records that exercise the crawl funnel: a
``404 Not Found`` response and a ``301`` redirect to one of the real pages. A few cited URLs are
absent from the archive on purpose, so that the demo shows a failure status too.
"""

from __future__ import annotations

import argparse
import csv
import functools
import gzip
import hashlib
import io
import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

REPO = Path(__file__).resolve().parents[2]
#: Fixed capture time of every record (reproducible builds).
CAPTURE_DATE = "2026-01-20T12:00:00Z"
CAPTURE_HTTP_DATE = "Tue, 20 Jan 2026 12:00:00 GMT"
WARCINFO = b"software: sourcebench jobs/demo/build_demo.py\r\nformat: WARC File Format 1.1\r\n"
RECORD_NAMESPACE = uuid.UUID("5b0c6f9e-2f0e-4d7a-9a57-0c5e7d1f8a11")


@dataclass(frozen=True)
class DemoPage:
    """One real page of ../shared/data/pages archived in the demo WARC."""

    alias: str
    """Short name used by the citation tables below."""
    dataset: str
    """Folder under ``pages/`` (aeb, htmldate, trafilatura)."""
    stem: str
    """Unique prefix of the file name under ``pages/<dataset>/html/``."""

    def path(self, data: Path) -> Path:
        """The page's gzipped HTML file (the prefix must match exactly one file)."""
        matches = sorted((data / "pages" / self.dataset / "html").glob(f"{self.stem}*.gz"))
        if len(matches) != 1:
            raise FileNotFoundError(f"{self.dataset}/{self.stem}: {len(matches)} files match, expected 1")
        return matches[0]

    def ground_truth_key(self, data: Path) -> str:
        """The key of the page in its set's ground_truth.json (the file name, with or without .html)."""
        return self.path(data).name.removesuffix(".gz")


PAGES: tuple[DemoPage, ...] = (
    # Google Stadia (shopping)
    DemoPage("wsj_stadia", "aeb", "042bb7b5fedab6ea"),
    DemoPage("thr_stadia", "aeb", "8267acacb9e4a109"),
    DemoPage("digg_stadia", "aeb", "680c2848e94a96f9"),
    DemoPage("mspu_stadia", "aeb", "aade2ec8d1e7b091"),
    # Gifts and gadgets (shopping)
    DemoPage("zdnet_gadgets", "aeb", "5fbc7ccb504c755a"),
    DemoPage("9to5mac_gifts", "aeb", "cc4aa22b8212aec7"),
    DemoPage("ign_deals", "aeb", "287e4d9f4af31733"),
    DemoPage("macrumors_mbp", "aeb", "232a43fb15abde80"),
    DemoPage("theperspective_items", "trafilatura", "ext.theperspective.com.items.html"),
    # Cars (shopping)
    DemoPage("autoindustriya_lexus", "aeb", "aadb38e527d53793"),
    DemoPage("ctpost_suvs", "aeb", "05844573ca7e1fba"),
    DemoPage("chron_carsales", "aeb", "9ebb3af65694a953"),
    # "Meth. We're on it." (debate)
    DemoPage("thehill_meth", "aeb", "156770d676ce7990"),
    DemoPage("nj_meth", "aeb", "3f65af7b6b98b1c9"),
    DemoPage("usatoday_meth", "aeb", "776a1c046798b474"),
    DemoPage("spokesman_meth", "aeb", "c13b9c0e04fb28d4"),
    # Tariffs (debate)
    DemoPage("nyt_tradewar", "aeb", "702d1da63b8e064c"),
    DemoPage("politifact_tariffs", "aeb", "b6906ca016bbfc64"),
    DemoPage("reuters_markets", "aeb", "57d46c9d751e3fd3"),
    # Local news (debate)
    DemoPage("latimes_gannett", "aeb", "8634d1211c3f2b73"),
    # Doobie Brothers (multi-hop)
    DemoPage("cleveland_doobie", "aeb", "35b158918c676ff2"),
    DemoPage("billboard_doobie", "aeb", "9cb8224b660f36c9"),
    DemoPage("rollingstone_doobie", "aeb", "ac1bfdd4c510f679"),
    # Commercial moon landers (multi-hop)
    DemoPage("aljazeera_moon", "aeb", "42aad16bde928862"),
    DemoPage("space_moon", "aeb", "c50845a7158af12e"),
    DemoPage("spacenews_moon", "aeb", "d1c57d7821e5a5b2"),
    # Europa water plumes (multi-hop)
    DemoPage("sciencealert_europa", "aeb", "14cc2a0ca59c62a8"),
    DemoPage("hawaii_europa", "aeb", "f344ca5fb36e130f"),
    # Bubonic plague (fact-check)
    DemoPage("nypost_plague", "aeb", "432362af0be43f6d"),
    DemoPage("thesun_plague", "aeb", "8b19453030820413"),
    DemoPage("express_plague", "aeb", "ba4dfe2d3e817ff7"),
    DemoPage("smithsonian_plague", "aeb", "ea25dd7edff4d279"),
    # Delhi oxygen bar (fact-check)
    DemoPage("newsnation_oxygen", "aeb", "076f4f33bf75059d"),
    DemoPage("vox_delhi", "aeb", "16c30add7e96315e"),
    # Feather duvet lung (fact-check)
    DemoPage("forbes_duvet", "aeb", "a078b3656adc0295"),
    DemoPage("livescience_duvet", "aeb", "bd673bd7988144f0"),
    # Community questions
    DemoPage("bi_retire", "aeb", "f81c6c05d9cbc933"),
    DemoPage("bigbrand_mindset", "aeb", "ec7fc408c5ce66c2"),
    DemoPage("healthline_binge", "aeb", "e593d7fe88f9f5cd"),
    DemoPage("beachbody_mealprep", "aeb", "5f03fc173ebc6abd"),
    DemoPage("beachbody_snacks", "aeb", "ec3878db7e49b1ed"),
    DemoPage("physorg_hibernate", "aeb", "e1c7023ee2148901"),
    DemoPage("ctv_hibernate", "aeb", "b37be3535e1fb61e"),
    DemoPage("healthline_bodyfat", "trafilatura", "healthline.com.fat.html"),
    DemoPage("mydaily_halloween", "trafilatura", "mydailymagazine.com.halloween.html"),
    DemoPage("treyhunner_pathlib", "htmldate", "treyhunner.com-pathlib.html"),
    DemoPage("strangemachines_python", "htmldate", "strangemachines.io.performant.html"),
    DemoPage("sob_rust", "trafilatura", "stackoverflow.com.rust.html"),
    # Off-topic or thin pages cited by the low-quality system
    DemoPage("pcmag_platters", "htmldate", "pcmag.com.platters.html"),
    DemoPage("antijune_hiking", "aeb", "0e014df693f18282"),
    DemoPage("linknaija_chelsea", "aeb", "358cc4a080456476"),
)

#: Synthetic records: a cited URL that answers 404, and an old spelling that redirects to a real page.
NOT_FOUND_URL = "https://www.healthline.com/nutrition/binge-eating-cure-in-one-day"
REDIRECT_URL = "http://nytimes.com/2019/11/18/business/trump-trade-war-china.html"
REDIRECT_TARGET = "nyt_tradewar"
#: Cited URLs that the archive does not hold (the replay reports them as failures).
MISSING_URLS = {
    "missing_stadia_deal": "https://stadia-deals-today.example-coupons.net/best-stadia-bundle-2019",
    "missing_plague_blog": "https://truthnewsdaily.example-blog.org/2019/11/rabbit-plague-coverup",
    "missing_retire_hack": "https://richquick.example-finance.info/retire-at-30-one-weird-trick",
}
SYNTHETIC_ALIASES = {"not_found_binge": NOT_FOUND_URL, "redirect_tradewar": REDIRECT_URL}


@dataclass(frozen=True)
class DemoQuery:
    query_id: str
    query_type: str
    query: str


QUERIES: tuple[DemoQuery, ...] = (
    DemoQuery("demo_vacos_1", "VACOS", "Is Google Stadia worth buying for cloud gaming, or should I wait?"),
    DemoQuery(
        "demo_vacos_2", "VACOS", "What are the best tech gadgets to give as gifts this holiday season?"
    ),
    DemoQuery(
        "demo_vacos_3",
        "VACOS",
        "Which new SUVs and convertibles from the 2019 L.A. Auto Show are worth buying?",
    ),
    DemoQuery(
        "demo_debate_1",
        "DebateQA",
        "Is South Dakota's 'Meth. We're on it.' anti-drug campaign effective or an embarrassment?",
    ),
    DemoQuery(
        "demo_debate_2", "DebateQA", "Are tariffs in the US-China trade war good or bad for Americans?"
    ),
    DemoQuery(
        "demo_debate_3",
        "DebateQA",
        "Will newspaper mergers like Gannett and GateHouse save or hurt local news?",
    ),
    DemoQuery(
        "demo_hotpot_1",
        "HotpotQA",
        "Which singer who left the Doobie Brothers in the 1980s rejoins the band for its 50th "
        "anniversary tour?",
    ),
    DemoQuery(
        "demo_hotpot_2",
        "HotpotQA",
        "Which space companies founded by Elon Musk and Jeff Bezos did NASA add to its commercial moon "
        "lander program?",
    ),
    DemoQuery(
        "demo_hotpot_3",
        "HotpotQA",
        "Which icy moon of Jupiter was found to have water vapor using a telescope in Hawaii?",
    ),
    DemoQuery(
        "demo_fact_1",
        "Pinocchios",
        "Did a hunter in China really catch bubonic plague from eating a wild rabbit?",
    ),
    DemoQuery(
        "demo_fact_2", "Pinocchios", "Is an 'oxygen bar' in Delhi really selling fresh air for Rs 300?"
    ),
    DemoQuery("demo_fact_3", "Pinocchios", "Can a feather duvet really give you a lung disease?"),
    DemoQuery("demo_quora_1", "QuoraQuestions", "How can I retire early?"),
    DemoQuery("demo_quora_2", "QuoraQuestions", "How do I stop binge eating?"),
    DemoQuery("demo_quora_3", "QuoraQuestions", "Could astronauts hibernate during long trips to Mars?"),
    DemoQuery(
        "demo_quora_4", "QuoraQuestions", "What is the most accurate way to measure body fat percentage?"
    ),
    DemoQuery(
        "demo_quora_5", "QuoraQuestions", "Why should Python programmers use pathlib instead of os.path?"
    ),
)

#: Simulated systems and the aliases they cite per query, in citation (rank) order.
#: demo-careful cites reputable news, science and reference pages; demo-clickbait cites tabloids,
#: thin blogs, off-topic pages and dead links; demo-mixed sits between the two.
SYSTEMS: dict[str, dict[str, tuple[str, ...]]] = {
    "demo-careful": {
        "demo_vacos_1": ("wsj_stadia", "thr_stadia", "digg_stadia"),
        "demo_vacos_2": ("zdnet_gadgets", "9to5mac_gifts", "macrumors_mbp"),
        "demo_vacos_3": ("ctpost_suvs", "autoindustriya_lexus", "chron_carsales"),
        "demo_debate_1": ("usatoday_meth", "thehill_meth", "spokesman_meth", "nj_meth"),
        "demo_debate_2": ("politifact_tariffs", "nyt_tradewar", "reuters_markets"),
        "demo_debate_3": ("latimes_gannett",),
        "demo_hotpot_1": ("rollingstone_doobie", "billboard_doobie", "cleveland_doobie"),
        "demo_hotpot_2": ("spacenews_moon", "space_moon", "aljazeera_moon"),
        "demo_hotpot_3": ("hawaii_europa", "sciencealert_europa"),
        "demo_fact_1": ("smithsonian_plague", "nypost_plague"),
        "demo_fact_2": ("newsnation_oxygen", "vox_delhi"),
        "demo_fact_3": ("livescience_duvet", "forbes_duvet"),
        "demo_quora_1": ("bi_retire",),
        "demo_quora_2": ("healthline_binge",),
        "demo_quora_3": ("physorg_hibernate", "ctv_hibernate"),
        "demo_quora_4": ("healthline_bodyfat",),
        "demo_quora_5": ("treyhunner_pathlib", "strangemachines_python"),
    },
    "demo-clickbait": {
        "demo_vacos_1": ("missing_stadia_deal", "mspu_stadia", "digg_stadia", "pcmag_platters"),
        "demo_vacos_2": ("theperspective_items", "ign_deals", "mydaily_halloween"),
        "demo_vacos_3": ("autoindustriya_lexus", "linknaija_chelsea"),
        "demo_debate_1": ("nj_meth", "antijune_hiking"),
        "demo_debate_2": ("reuters_markets", "linknaija_chelsea", "redirect_tradewar"),
        "demo_debate_3": ("bigbrand_mindset", "pcmag_platters"),
        "demo_hotpot_1": ("cleveland_doobie", "antijune_hiking"),
        "demo_hotpot_2": ("aljazeera_moon", "pcmag_platters"),
        "demo_hotpot_3": ("sciencealert_europa", "mydaily_halloween"),
        "demo_fact_1": ("thesun_plague", "express_plague", "missing_plague_blog", "nypost_plague"),
        "demo_fact_2": ("vox_delhi", "antijune_hiking"),
        "demo_fact_3": ("forbes_duvet", "mydaily_halloween"),
        "demo_quora_1": ("missing_retire_hack", "bigbrand_mindset", "linknaija_chelsea"),
        "demo_quora_2": (
            "not_found_binge",
            "beachbody_snacks",
            "beachbody_mealprep",
            "mydaily_halloween",
            "theperspective_items",
            "healthline_binge",
        ),
        "demo_quora_3": ("ctv_hibernate", "pcmag_platters"),
        "demo_quora_4": ("mydaily_halloween", "beachbody_mealprep", "theperspective_items"),
        "demo_quora_5": ("sob_rust", "pcmag_platters"),
    },
    "demo-mixed": {
        "demo_vacos_1": ("digg_stadia", "mspu_stadia", "thr_stadia"),
        "demo_vacos_2": ("ign_deals", "zdnet_gadgets", "theperspective_items"),
        "demo_vacos_3": ("chron_carsales", "ctpost_suvs"),
        "demo_debate_1": ("thehill_meth", "nj_meth", "antijune_hiking"),
        "demo_debate_2": ("redirect_tradewar", "reuters_markets", "politifact_tariffs"),
        "demo_debate_3": ("latimes_gannett", "bigbrand_mindset"),
        "demo_hotpot_1": ("billboard_doobie", "cleveland_doobie"),
        "demo_hotpot_2": ("space_moon", "aljazeera_moon", "pcmag_platters"),
        "demo_hotpot_3": ("sciencealert_europa", "hawaii_europa"),
        "demo_fact_1": ("express_plague", "smithsonian_plague", "thesun_plague"),
        "demo_fact_2": ("vox_delhi", "newsnation_oxygen"),
        "demo_fact_3": ("forbes_duvet", "livescience_duvet"),
        "demo_quora_1": ("bi_retire", "bigbrand_mindset"),
        "demo_quora_2": (
            "beachbody_snacks",
            "healthline_binge",
            "beachbody_mealprep",
            "not_found_binge",
            "mydaily_halloween",
            "theperspective_items",
            "healthline_bodyfat",
        ),
        "demo_quora_3": ("ctv_hibernate", "physorg_hibernate"),
        "demo_quora_4": ("healthline_bodyfat", "mydaily_halloween"),
        "demo_quora_5": ("strangemachines_python", "sob_rust", "treyhunner_pathlib"),
    },
}


def detect_charset(html: bytes) -> str:
    """The charset a server would announce: the page's own ``<meta charset>``, else UTF-8 if it decodes."""
    match = re.search(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_-]+)""", html[:8192], re.IGNORECASE)
    if match:
        return match.group(1).decode("ascii").lower()
    html.decode("utf-8")  # raises if a page without a declared charset is not UTF-8
    return "utf-8"


@functools.cache
def _ground_truth(data: Path, dataset: str) -> dict[str, dict]:
    return json.loads((data / "pages" / dataset / "ground_truth.json").read_text())


def page_url(data: Path, page: DemoPage) -> str:
    truth = _ground_truth(data, page.dataset)
    key = page.ground_truth_key(data)
    key = key if key in truth else key.removesuffix(".html")
    return truth[key]["url"]


def load_page_html(data: Path, page: DemoPage) -> bytes:
    return gzip.decompress(page.path(data).read_bytes())


def _record_id(kind: str, url: str) -> str:
    return f"<urn:uuid:{uuid.uuid5(RECORD_NAMESPACE, f'{kind} {url}')}>"


def _write_response(writer: WARCWriter, url: str, status: str, headers: list[tuple[str, str]], body: bytes):
    http_headers = StatusAndHeaders(
        status,
        [*headers, ("Date", CAPTURE_HTTP_DATE), ("Content-Length", str(len(body)))],
        protocol="HTTP/1.1",
    )
    record = writer.create_warc_record(
        url,
        "response",
        payload=io.BytesIO(body),
        length=len(body),
        http_headers=http_headers,
        warc_headers_dict={"WARC-Date": CAPTURE_DATE, "WARC-Record-ID": _record_id("response", url)},
    )
    writer.write_record(record)


def build_warc(data: Path, out: Path) -> list[dict[str, object]]:
    """Write ``demo.warc.gz`` and return one manifest row per archived URL."""
    rows: list[dict[str, object]] = []
    urls = {page.alias: page_url(data, page) for page in PAGES}
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    info = writer.create_warc_record(
        "",
        "warcinfo",
        payload=io.BytesIO(WARCINFO),
        warc_headers_dict={
            "WARC-Date": CAPTURE_DATE,
            "WARC-Record-ID": _record_id("warcinfo", "demo.warc.gz"),
            "WARC-Filename": "demo.warc.gz",
            "Content-Type": "application/warc-fields",
        },
    )
    writer.write_record(info)
    for page in PAGES:
        html = load_page_html(data, page)
        charset = detect_charset(html)
        url = urls[page.alias]
        _write_response(writer, url, "200 OK", [("Content-Type", f"text/html; charset={charset}")], html)
        title = re.search(rb"<title[^>]*>(.*?)</title>", html, re.IGNORECASE | re.DOTALL)
        rows.append(
            {
                "alias": page.alias,
                "url": url,
                "http_status": 200,
                "source": f"shared/data/{page.path(data).relative_to(data).as_posix()}",
                "title": " ".join(title.group(1).decode(charset, "replace").split()) if title else "",
                "bytes": len(html),
                "sha256": hashlib.sha256(html).hexdigest(),
            }
        )
    html_type = [("Content-Type", "text/html; charset=utf-8")]
    not_found = (
        b"<!doctype html><html><head><title>Page not found</title></head><body><h1>404</h1></body></html>"
    )
    _write_response(writer, NOT_FOUND_URL, "404 Not Found", html_type, not_found)
    rows.append({"alias": "not_found_binge", "url": NOT_FOUND_URL, "http_status": 404, "source": "synthetic"})
    _write_response(
        writer,
        REDIRECT_URL,
        "301 Moved Permanently",
        [("Location", urls[REDIRECT_TARGET]), *html_type],
        b"",
    )
    rows.append(
        {"alias": "redirect_tradewar", "url": REDIRECT_URL, "http_status": 301, "source": "synthetic"}
    )
    (out / "demo.warc.gz").write_bytes(buffer.getvalue())
    return rows


def alias_urls(data: Path) -> dict[str, str]:
    """Every citable alias -> URL: archived pages, synthetic records, and the deliberately missing URLs."""
    return {**{p.alias: page_url(data, p) for p in PAGES}, **SYNTHETIC_ALIASES, **MISSING_URLS}


def write_queries(out: Path) -> None:
    with open(out / "queries.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["query_id", "query", "query_type"])
        for query in QUERIES:
            writer.writerow([query.query_id, query.query, query.query_type])


def write_bundles(data: Path, out: Path) -> None:
    """One official ``answer_url_bundle`` JSON per simulated system under ``citations/``."""
    urls = alias_urls(data)
    queries = {q.query_id: q for q in QUERIES}
    folder = out / "citations"
    folder.mkdir(exist_ok=True)
    for system, cited in SYSTEMS.items():
        runs = []
        for query_id, aliases in cited.items():
            answer = (
                f"[{system}, simulated answer for the offline demo] An answer to: {queries[query_id].query} "
                f"It cites {len(aliases)} source(s)."
            )
            runs.append(
                {
                    "query_id": query_id,
                    "answer_text": answer,
                    "cited_urls": [urls[alias] for alias in aliases],
                    "raw_response": None,
                }
            )
        bundle = {"submission_mode": "answer_url_bundle", "model_name": system, "runs": runs}
        text = json.dumps(bundle, indent=2, ensure_ascii=False) + "\n"
        (folder / f"{system}.json").write_text(text, encoding="utf-8")


#: The simulated search engine of the demo, a system of kind SERP for the overlap analysis.
SERP_SYSTEM = "demo-serp"
#: Results kept per query, as a search engine's first page.
SERP_TOP = 6


def serp_results() -> dict[str, tuple[str, ...]]:
    """The demo SERP per query: what ranks is what the clickbait system cites (SEO-heavy pages), then
    the mixed system's other pages, then one reputable page; without repeats, top ``SERP_TOP``.

    So the more a system leans on what the search engine ranks, the lower its source quality: the
    inverse relation between score and SERP overlap that the paper reports.
    """
    results = {}
    for query in QUERIES:
        careful = SYSTEMS["demo-careful"].get(query.query_id, ())
        ranked = [
            *SYSTEMS["demo-clickbait"].get(query.query_id, ()),
            *(a for a in SYSTEMS["demo-mixed"].get(query.query_id, ()) if a not in careful),
            *careful[:1],
        ]
        results[query.query_id] = tuple(dict.fromkeys(ranked))[:SERP_TOP]
    return results


def write_serp(data: Path, out: Path) -> None:
    """The demo SERP as ranked results in the SERP CSV format (``query_id,rank,url``)."""
    urls = alias_urls(data)
    with open(out / "serp.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["query_id", "rank", "url"])
        for query_id, aliases in serp_results().items():
            for rank, alias in enumerate(aliases, start=1):
                writer.writerow([query_id, rank, urls[alias]])


def write_manifest(out: Path, rows: list[dict[str, object]]) -> None:
    columns = ["alias", "url", "http_status", "source", "title", "bytes", "sha256"]
    with open(out / "pages.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def build(data: Path, out: Path) -> None:
    """Rebuild every demo file under ``out`` from the reference pages under ``data``."""
    out.mkdir(parents=True, exist_ok=True)
    rows = build_warc(data, out)
    write_manifest(out, rows)
    write_queries(out)
    write_bundles(data, out)
    write_serp(data, out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data", help="../shared/data")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent, help="output folder")
    args = parser.parse_args()
    build(args.data, args.out)
    print(f"demo corpus written to {args.out}")


if __name__ == "__main__":
    main()
