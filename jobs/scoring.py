"""From citations to scored sources: select the sources to audit, then join pages and judge scores.

Two steps around the crawl and the judge:

1. :func:`select_sources` keeps, per (system, query), the sources the official method scores: one row
   per distinct canonical URL, the official ``selected_topk`` flag where the citations carry it, else
   the first ``top_k`` distinct URLs by citation rank (the official top-5).
2. :func:`score_sources` joins those rows with the crawl's page records and the judge's content
   vectors into ``<run>/scores/source_scores.parquet`` (:data:`SCORED_SOURCES_SCHEMA`): the columns
   of :data:`jobs.schemas.SOURCE_SCORES_SCHEMA` first, then where each row came from and its status.
   A page that failed to crawl or to be judged stays a row, with null scores and its status; it
   never gets a default score. :func:`write_source_scores` runs it one range of queries at a time,
   so that the judgments (with their justifications) are never all held at once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from crawler.base import InputError, RunStore
from crawler.layout import LAYOUT
from crawler.urls import InvalidURL, canonicalize_url, url_key
from jobs.schemas import SOURCE_SCORES_SCHEMA
from judge.pairs import page_ids
from judge.plan import MAX_BUCKETS, Spill
from judge.rubric import DIMENSION_KEYS
from judge.vectors import VECTOR_COLUMNS, content_vectors

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow.dataset as ds


#: The sources chosen for the audit, one row per (system, query, canonical URL).
SELECTED_SOURCES_SCHEMA = pa.schema(
    [
        pa.field("system", pa.string(), nullable=False),
        pa.field("query_id", pa.string(), nullable=False),
        pa.field("query_type", pa.string(), nullable=False),
        pa.field("url_key", pa.string(), nullable=False),  # crawler.urls.url_key of the cited URL
        pa.field("canonical_url", pa.string(), nullable=False),
        pa.field("cited_url", pa.string(), nullable=False),  # the best-ranked spelling as cited
        pa.field("rank", pa.int32(), nullable=False),  # best citation rank of this URL for the query
        pa.field("agg_source_id", pa.string(), nullable=False),  # from official imports, else the url_key
        pa.field("language", pa.string()),  # of the answer (citation), else of the query; null if unknown
    ],
    metadata={"schema": "selected_sources", "version": "2"},
)

#: SOURCE_SCORES_SCHEMA plus provenance and status (the reduce reads the first columns).
SCORED_SOURCES_SCHEMA = pa.schema(
    [
        *SOURCE_SCORES_SCHEMA,
        pa.field("url_key", pa.string(), nullable=False),
        pa.field("cited_url", pa.string(), nullable=False),
        pa.field("rank", pa.int32(), nullable=False),
        pa.field("page_status", pa.string(), nullable=False),  # crawler PAGE_STATUSES, or "missing"
        pa.field("page_error", pa.string()),
        pa.field("judge_status", pa.string()),  # judge status when the page was judged, else null
    ],
    metadata={"schema": "scored_sources", "version": "1"},
)

#: Status of a selected source whose page record or content vector is absent (an incomplete stage).
MISSING = "missing"


def select_sources(
    citations: pa.Table, queries: pa.Table, top_k: int | None, source: str = "citations"
) -> pa.Table:
    """The sources to audit (:data:`SELECTED_SOURCES_SCHEMA`), sorted by system, query and rank.

    Args:
        citations: A :data:`jobs.schemas.CITATIONS_SCHEMA` table.
        queries: A :data:`jobs.schemas.QUERIES_SCHEMA` table; every cited query must be in it.
        top_k: Distinct sources kept per (system, query) when the citations carry no ``selected_topk``
            flag for it; None keeps all.
        source: Name of the citation input(s), for error messages.

    Raises:
        InputError: a citation names an unknown query, or a URL that cannot be canonicalised.
    """
    columns = ["system", "query_id", "url", "rank", "agg_source_id", "selected_topk", "language"]
    frame = citations.select(columns).to_pandas()
    ids = queries["query_id"].to_pylist()
    query_types = dict(zip(ids, queries["query_type"].to_pylist(), strict=True))
    query_languages = dict(zip(ids, queries["language"].to_pylist(), strict=True))
    unknown = sorted(set(frame["query_id"]) - set(query_types))
    if unknown:
        raise InputError(
            source, f"query_id(s) not in the queries file: {', '.join(unknown[:5])}", field="query_id"
        )
    try:
        frame["canonical_url"] = [canonicalize_url(url) for url in frame["url"]]
    except InvalidURL as exc:
        raise InputError(source, str(exc), field="url") from None
    frame["url_key"] = [url_key(url) for url in frame["canonical_url"]]
    frame = frame.sort_values(["system", "query_id", "rank"], kind="stable")
    frame = frame.drop_duplicates(["system", "query_id", "url_key"], keep="first")
    frame = frame[_top_sources(frame, top_k)]
    frame["query_type"] = frame["query_id"].map(query_types)
    answer_language = frame["language"]
    frame["language"] = answer_language.where(answer_language.notna(), frame["query_id"].map(query_languages))
    frame["agg_source_id"] = frame["agg_source_id"].where(frame["agg_source_id"].notna(), frame["url_key"])
    frame = frame.rename(columns={"url": "cited_url"})
    columns = SELECTED_SOURCES_SCHEMA.names
    return pa.Table.from_pandas(frame[columns], schema=SELECTED_SOURCES_SCHEMA, preserve_index=False)


def _top_sources(frame: pd.DataFrame, top_k: int | None) -> pd.Series:
    """Which rows each answer (system, query) keeps: the official flags where the answer has any, else
    its first ``top_k`` (``frame`` is sorted by rank within each answer). Group-wise, no Python loop."""
    answers = [frame["system"], frame["query_id"]]
    flags = frame["selected_topk"]
    has_flags = flags.notna().groupby(answers).transform("any")
    first_k = frame.groupby(answers).cumcount() < (len(frame) if top_k is None else top_k)
    return (has_flags & flags.fillna(False).astype(bool)) | (~has_flags & first_k)


def page_vectors(vectors: pa.Table, ids: pa.Table) -> pd.DataFrame:
    """Content vectors keyed by (page_id, query_id): per page the scored vector of any alias judged."""
    frame = vectors.select(["url_key", "query_id", *DIMENSION_KEYS, "judge_status"]).to_pandas()
    frame = frame.merge(ids.to_pandas(), on="url_key", how="inner")
    frame["rank"] = (frame["judge_status"] != "scored").astype(int)
    frame = frame.sort_values(["page_id", "query_id", "rank", "url_key"], kind="stable")
    return frame.drop_duplicates(["page_id", "query_id"]).drop(columns=["url_key", "rank"])


#: The short page columns the scores need; the text enters only as its length.
PAGE_SUMMARY_COLUMNS = ("url_key", "url", "status", "error", "final_url", "content_sha256", "language")


def page_summaries(pages: pa.Table | ds.Dataset) -> pa.Table:
    """Page records reduced to what the scores need: :data:`PAGE_SUMMARY_COLUMNS` and
    ``text_content_length`` (characters of ``text_full``, else ``text_main``).

    Args:
        pages: Page records (crawler ``PAGE_SCHEMA``): a dataset of the run's parts, scanned batch by
            batch so that the page text is never held whole, or a table.
    """
    import pyarrow.dataset as ds

    source = ds.dataset(pages) if isinstance(pages, pa.Table) else pages
    projection = {name: ds.field(name) for name in PAGE_SUMMARY_COLUMNS}
    text = pc.coalesce(ds.field("text_full"), ds.field("text_main"))
    projection["text_content_length"] = pc.utf8_length(text).cast(pa.float64())
    return source.to_table(columns=projection)


def score_sources(selected: pa.Table, pages: pa.Table, vectors: pa.Table) -> pa.Table:
    """Join selected sources, page records and content vectors into :data:`SCORED_SOURCES_SCHEMA`.

    Args:
        selected: The output of :func:`select_sources`.
        pages: :func:`page_summaries` of the page records, one row per ``url_key``.
        vectors: Content vectors (judge ``CONTENT_VECTORS_SCHEMA``), one row per (url_key, query_id)
            judged; aliases of one page share its vector (:func:`judge.pairs.page_ids`).
    """
    page_frame = pages.select(["url_key", "status", "error", "text_content_length", "language"]).to_pandas()
    page_frame = page_frame.rename(
        columns={"status": "page_status", "error": "page_error", "language": "page_language"}
    )
    ids = page_ids(pages)
    frame = selected.to_pandas().merge(page_frame, on="url_key", how="left", validate="many_to_one")
    frame = frame.merge(ids.to_pandas(), on="url_key", how="left", validate="many_to_one")
    frame = frame.merge(
        page_vectors(vectors, ids), on=["page_id", "query_id"], how="left", validate="many_to_one"
    )
    frame["page_status"] = frame["page_status"].fillna(MISSING)
    # The answer's (or query's) language, which sweeps break results down by; else the page's.
    frame["language"] = frame["language"].where(frame["language"].notna(), frame["page_language"])
    ok = frame["page_status"] == "ok"
    frame.loc[ok & frame["judge_status"].isna(), "judge_status"] = MISSING
    # Scores come from the judge only, for pages that were fetched; nothing is filled in.
    frame.loc[~ok, list(DIMENSION_KEYS)] = float("nan")
    frame.loc[~ok, "judge_status"] = None
    frame.loc[~ok, "text_content_length"] = float("nan")
    frame = frame.rename(columns={"system": "model_name", "canonical_url": "source_url"})
    frame = frame.sort_values(["model_name", "query_id", "rank"], kind="stable")
    return pa.Table.from_pandas(
        frame[SCORED_SOURCES_SCHEMA.names], schema=SCORED_SOURCES_SCHEMA, preserve_index=False
    )


class QueryRanges:
    """Consecutive ranges of the sorted query ids, each holding about ``bucket_rows`` rows of a table.

    Everything the audit derives from judgments (content vectors, completeness) depends only on the
    rows of one (page, query), so it can be computed one range of queries at a time.
    """

    def __init__(self, query_ids: pa.ChunkedArray, bucket_rows: int):
        counts = pc.value_counts(query_ids).flatten()
        order = pc.sort_indices(counts[0])
        sizes = counts[1].take(order).to_numpy()
        width = max(bucket_rows, -(-len(query_ids) // MAX_BUCKETS))
        # Numbered densely: a query holding several widths of rows does not leave empty ranges.
        starts, numbers = np.unique((sizes.cumsum() - sizes) // width, return_inverse=True)
        self.ids = counts[0].take(order)
        self._numbers = pa.array(numbers, pa.int32())
        self.count = len(starts)
        """Number of ranges (at most :data:`judge.plan.MAX_BUCKETS`); range numbers follow the ids."""

    def of(self, query_id: pa.ChunkedArray | pa.Array) -> pa.Array:
        """The range of each query id (null for ids the table did not hold)."""
        return self._numbers.take(pc.index_in(query_id, value_set=self.ids))

    def spill(self, judgments: ds.Dataset, columns: Sequence[str], folder: Path, keep_others: bool) -> Spill:
        """``columns`` of the judgments, scanned batch by batch, spilled to ``folder`` by range.

        Args:
            keep_others: Keep the rows of other queries, in the extra range :attr:`count`.
        """
        spill = Spill(folder, "judgments", pa.schema([judgments.schema.field(c) for c in columns]))
        for batch in judgments.to_batches(columns=list(columns)):
            number = self.of(batch.column("query_id"))
            if keep_others:
                spill.add(batch, pc.fill_null(number, self.count))
            else:
                known = pc.is_valid(number)
                spill.add(batch.filter(known), number.filter(known))
        spill.close()
        return spill


def write_source_scores(
    store: RunStore,
    selected: pa.Table,
    pages: pa.Table,
    judgments: ds.Dataset,
    folder: Path,
    bucket_rows: int,
) -> dict[str, dict[str, int]]:
    """:func:`score_sources` one range of queries at a time into ``scores/source_scores.parquet``.

    The judgments are scanned batch by batch and spilled (``folder``) by range of query ids; each range
    becomes content vectors, then scored sources, spilled by system; the file is then written system
    by system, range by range, so its rows are in the order :func:`score_sources` gives a whole run.
    The driver holds one range's judgments and vectors at a time, besides ``selected`` and ``pages``.

    Args:
        store: The run.
        selected: :func:`select_sources` of the run, sorted by system, query and rank.
        pages: :func:`page_summaries` of the run's page records.
        judgments: The run's judgment parts (``judge.judgments_dataset``).
        folder: An empty local folder for the spill files.
        bucket_rows: Selected sources per range (about; at most ``MAX_BUCKETS`` ranges).

    Returns:
        :func:`status_counts` of the rows written.
    """
    ranges = QueryRanges(selected["query_id"], bucket_rows)
    by_range = ranges.spill(judgments, VECTOR_COLUMNS, folder, keep_others=False)
    systems = pc.unique(selected["system"]).sort()
    by_system = Spill(folder, "scores", SCORED_SOURCES_SCHEMA)
    selected_range = ranges.of(selected["query_id"])
    for number in range(ranges.count):
        sources = selected.filter(pc.equal(selected_range, number))
        vectors = content_vectors(by_range.read(number))
        wanted = pc.is_in(pages["url_key"], value_set=pc.unique(sources["url_key"]))
        scored = score_sources(sources, pages.filter(wanted), vectors)
        by_system.add(scored, pc.index_in(scored["model_name"], value_set=systems))
    by_system.close()
    counts: dict[str, Counter] = {"page_status": Counter(), "judge_status": Counter()}
    with (
        store.open_atomic(LAYOUT.source_scores) as out,
        pq.ParquetWriter(out, SCORED_SOURCES_SCHEMA, compression="zstd") as writer,
    ):
        for system in range(len(systems)):
            for batch in by_system.batches(system):
                writer.write_batch(batch)
                for name, found in status_counts(pa.Table.from_batches([batch])).items():
                    counts[name].update(found)
    return {name: dict(sorted(found.items())) for name, found in counts.items()}


def status_counts(scores: pa.Table) -> dict[str, dict[str, int]]:
    """Counts of sources per page status and per judge status (for the run summary)."""
    frame = scores.select(["page_status", "judge_status"]).to_pandas()
    return {
        "page_status": {str(k): int(v) for k, v in frame["page_status"].value_counts().sort_index().items()},
        "judge_status": {
            str(k): int(v)
            for k, v in frame["judge_status"].fillna("not_judged").value_counts().sort_index().items()
        },
    }
