"""Typed crawl configuration: one model per concern, loadable from a dict or a YAML file."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from crawler.base import ConfigModel, ConfigPath, load_model, validate_model
from crawler.netguard import AddressPolicy
from crawler.warc import WARC_COMPRESSION_LEVEL

#: Chromium flags that work in containers without a GPU or network-side services (docs/design.md).
CHROMIUM_FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


class _Model(ConfigModel):
    model_config = ConfigDict(frozen=True)


class Politeness(_Model):
    """How hard one host is hit."""

    #: How often pacing is checkpointed changes no page: a rerun with another value resumes the crawl.
    execution_fields: ClassVar[frozenset[str]] = frozenset({"pacing_checkpoint_s"})

    per_host_concurrency: int = Field(4, ge=1, description="Parallel requests to one host at most.")
    download_delay_s: float = Field(
        0.0, ge=0, description="Minimum seconds between two requests to one host (randomised 0.5-1.5x)."
    )
    autothrottle: bool = Field(
        True,
        description="Scrapy AutoThrottle: adapt the delay to each host's latency (never below the delay).",
    )
    autothrottle_target_concurrency: float = Field(
        4.0,
        gt=0,
        description="AutoThrottle's goal of parallel requests per host (capped by per_host_concurrency).",
    )
    max_crawl_delay_s: float = Field(
        30.0,
        ge=0,
        description="Longest robots.txt Crawl-delay honoured (as a per-host floor of the delay); a host "
        "asking for more is not crawled: its URLs end as robots_disallowed.",
    )
    pacing_checkpoint_s: float = Field(
        30.0,
        gt=0,
        description="Seconds between two checkpoints of a shard process's host pacing into the run "
        "(crawl/_pacing/<shard>.json; a robots.txt Crawl-delay is written at once): a retry of the shard, "
        "on this node or another, starts from it, counting a request to each host as late as that many "
        "seconds after the checkpoint. Each checkpoint is one small write (an S3 PUT) per shard process.",
    )
    total_concurrency: int = Field(256, ge=1, description="Parallel requests of one shard process in total.")
    cross_host_redirects: Literal["defer", "follow"] = Field(
        "defer",
        description="A redirect to a host outside the shard: 'defer' fetches its target in a later "
        "redirect round, in shards packed by the target's host (as Nutch records redirects for its next "
        "fetch cycle), so that the host's limits hold across the cluster; 'follow' fetches it at once, "
        "from this shard, beside whichever shard holds that host.",
    )
    user_agent: str = Field(
        "sourcebench-crawler/0.1 (+https://github.com/WukLab/SourceBench; research audit)",
        description="User-Agent header, also the agent name matched against robots.txt.",
    )


class FetchLimits(_Model):
    """Timeouts, retries and size limits of one URL."""

    timeout_s: float = Field(20.0, gt=0, description="Per-request download timeout (connect to last byte).")
    retries: int = Field(2, ge=0, description="Retries of a transient failure (connection error, 5xx, 429).")
    backoff_base_s: float = Field(0.5, ge=0, description="Exponential backoff: base x 2^attempt seconds.")
    max_retry_after_s: float = Field(
        30.0,
        ge=0,
        description="Longest Retry-After (429/503) honoured; a longer one ends the URL as http_error.",
    )
    max_redirects: int = Field(5, ge=0, description="Redirect hops followed at most (a loop ends as error).")
    max_url_chars: int = Field(
        2083,
        ge=16,
        description="Longest URL fetched (the old Internet Explorer limit many servers still keep); a "
        "longer one, cited or a redirect target, ends as error with its length in the reason.",
    )
    max_bytes: int = Field(
        5 * 1024 * 1024, gt=0, description="Body size cap in bytes, applied after decompression (too_large)."
    )
    min_text_chars: int = Field(
        25, ge=0, description="A page whose visible text is shorter than this ends as too_short."
    )


class RenderConfig(_Model):
    """JavaScript rendering through scrapy-playwright and Debian Chromium."""

    policy: Literal["never", "auto", "always"] = Field(
        "auto",
        description="never; auto = render HTML whose static text is thin; always = render every HTML page.",
    )
    thin_text_chars: int = Field(
        200, ge=0, description="auto: render when the static page shows fewer visible characters than this."
    )
    chromium_path: str = Field(
        "/usr/bin/chromium", description="Chromium executable (Debian package `chromium`)."
    )
    chromium_flags: tuple[str, ...] = Field(CHROMIUM_FLAGS, description="Chromium command-line flags.")
    max_contexts: int = Field(
        2, ge=1, description="Browser contexts open at once (each is an isolated profile)."
    )
    pages_per_context: int = Field(
        20, ge=1, description="Pages rendered in one context before it is closed and a fresh one opened."
    )
    timeout_s: float = Field(20.0, gt=0, description="Navigation timeout of a render.")
    settle_ms: int = Field(500, ge=0, description="Extra wait after the load event for late scripts.")
    deadline_s: float = Field(
        40.0,
        gt=0,
        description="Wall-clock limit of one render once its page exists (navigation, settle wait, "
        "snapshot); past it the page is closed and the static fetch kept, with a note in `error`.",
    )

    @model_validator(mode="after")
    def _deadline_covers_navigation(self) -> RenderConfig:
        if self.deadline_s <= self.timeout_s + self.settle_ms / 1000:
            raise ValueError(
                f"deadline_s ({self.deadline_s:g}) must exceed timeout_s + settle_ms "
                f"({self.timeout_s + self.settle_ms / 1000:g} s)"
            )
        return self


class NetworkPolicy(_Model):
    """What a crawl may connect to, and whether it obeys robots.txt."""

    obey_robots: bool = Field(
        True, description="Obey robots.txt (Protego); False is recorded in the run manifest."
    )
    allow_private_networks: bool = Field(
        False, description="Allow loopback/private/link-local/metadata addresses (intranets and tests only)."
    )
    allowlist: tuple[str, ...] = Field(
        (), description="Hosts or CIDR ranges allowed although private, e.g. ['127.0.0.2/31']."
    )

    def address_policy(self) -> AddressPolicy:
        return AddressPolicy(allow_private_networks=self.allow_private_networks, allowlist=self.allowlist)

    @field_validator("allowlist", mode="before")
    @classmethod
    def _one_string_is_a_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class CrawlConfig(_Model):
    """Everything a crawl needs besides its URLs.

    Example YAML::

        politeness: {per_host_concurrency: 2, download_delay_s: 0.5}
        limits: {timeout_s: 15, max_bytes: 3000000}
        render: {policy: auto}
        network: {obey_robots: true}
        replay_warcs: [s3://bucket/archive/CC-MAIN-2025-51-00001.warc.gz]
    """

    #: Settings that change how the work is cut and placed, not what is fetched: a rerun with other
    #: values resumes the committed shards instead of planning new ones over the same URLs.
    execution_fields: ClassVar[frozenset[str]] = frozenset(
        {
            "shard_size",
            "flush_every",
            "extract_workers",
            "warc_compression_level",
            "ray_resources",
            "ray_num_cpus",
        }
    )

    politeness: Politeness = Field(default_factory=Politeness, description="Per-host politeness.")
    limits: FetchLimits = Field(default_factory=FetchLimits, description="Timeouts, retries and size caps.")
    render: RenderConfig = Field(default_factory=RenderConfig, description="JavaScript rendering.")
    network: NetworkPolicy = Field(default_factory=NetworkPolicy, description="SSRF guard and robots.txt.")
    replay_warcs: tuple[ConfigPath, ...] = Field(
        (),
        description="Serve the crawl from these WARC/ARC files (paths or s3:// URIs), not the live web; "
        "a URL missing from them ends as error.",
    )
    shard_size: int = Field(
        500, ge=1, description="URLs per shard (one Scrapy subprocess; a host's shards share one Ray task)."
    )
    flush_every: int = Field(
        100,
        ge=1,
        description="Page records buffered before a Parquet/WARC part is committed (resume granularity).",
    )
    extract_workers: int = Field(
        0, ge=0, description="Processes extracting pages beside the fetcher in one shard; 0 = extract inline."
    )
    warc_compression_level: int = Field(
        WARC_COMPRESSION_LEVEL,
        ge=1,
        le=9,
        description="zlib level of the WARC parts (6: 3.0 ms a page, 9: 4.8 ms for 0.6 % fewer bytes).",
    )
    ray_resources: dict[str, float] = Field(
        default_factory=dict,
        description='Custom Ray resources per crawl task, e.g. {"crawler": 1} to pin it to crawl nodes.',
    )
    ray_num_cpus: float = Field(1.0, gt=0, description="Ray CPUs each crawl task requests.")
    shard_timeout_s: float = Field(
        3600.0,
        gt=0,
        description="Wall-clock limit of one shard process. At it the process sends nothing more, commits "
        "what is in flight once it ends, and exits; the shard's other URLs go on in a new process, for as "
        "long as each process commits records (a host's long Crawl-delay never costs URLs). Two processes "
        "in a row that commit nothing, or die, leave the shard's missing URLs as error.",
    )
    shard_stop_grace_s: float = Field(
        300.0,
        ge=0,
        description="Seconds a shard process past shard_timeout_s has to finish the requests in flight "
        "before it is killed (its uncommitted records are then fetched again by the next process).",
    )
    stall_timeout_s: float = Field(
        300.0,
        gt=0,
        description="Seconds without any URL finishing after which a shard is stopped: requested URLs "
        "end as timeout, the others as error. Keep it above the slowest single URL (robots.txt, retries "
        "x timeout, Retry-After, render deadline).",
    )

    @classmethod
    def from_yaml(cls, path: str | Path) -> CrawlConfig:
        """Load from a YAML file; the crawl settings may sit under a top-level ``crawl:`` key."""
        return load_model(cls, path, section="crawl")

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<config>") -> CrawlConfig:
        """Validate a dict; a bad value raises InputError naming the field."""
        return validate_model(cls, data, source)
