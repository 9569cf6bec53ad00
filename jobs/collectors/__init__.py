"""Collecting answers and citations from the systems under test (generative engines and SERPs)."""

from jobs.collectors.citations import CITATION_SOURCES, ParsedAnswer, links_in_text, parse_answer
from jobs.collectors.client import (
    ANSWER_STATUSES,
    CallResult,
    EndpointClient,
    Pacer,
    request_body,
)
from jobs.collectors.config import CollectConfig, load_collect_config
from jobs.collectors.keys import KeyRing, load_secrets_file
from jobs.collectors.runner import Sweep
from jobs.collectors.serp import load_serp
from jobs.collectors.sweeps import (
    QueryTemplate,
    TemplateFile,
    expand_templates,
    load_query_set,
    load_template_file,
    stratified_sample,
)
from jobs.collectors.systems import EndpointSystem, RequestPolicy, SerpSystem, load_systems
from jobs.collectors.tables import ANSWERS_SCHEMA

__all__ = [
    "ANSWERS_SCHEMA",
    "ANSWER_STATUSES",
    "CITATION_SOURCES",
    "CallResult",
    "CollectConfig",
    "EndpointClient",
    "EndpointSystem",
    "KeyRing",
    "Pacer",
    "ParsedAnswer",
    "QueryTemplate",
    "RequestPolicy",
    "SerpSystem",
    "Sweep",
    "TemplateFile",
    "expand_templates",
    "links_in_text",
    "load_collect_config",
    "load_query_set",
    "load_secrets_file",
    "load_serp",
    "load_systems",
    "load_template_file",
    "parse_answer",
    "request_body",
    "stratified_sample",
]
