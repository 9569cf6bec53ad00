"""Collecting answers and citations from the systems under test (generative engines and SERPs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler.lazy import lazy_exports

#: public name -> the module that defines it (imported on first use, PEP 562: the audit imports
#: jobs.collectors.serp without loading the HTTP client).
_HOMES = {
    "CITATION_SOURCES": "jobs.collectors.citations",
    "ParsedAnswer": "jobs.collectors.citations",
    "links_in_text": "jobs.collectors.citations",
    "parse_answer": "jobs.collectors.citations",
    "ANSWER_STATUSES": "jobs.collectors.client",
    "CallResult": "jobs.collectors.client",
    "EndpointClient": "jobs.collectors.client",
    "Pacer": "jobs.collectors.client",
    "request_body": "jobs.collectors.client",
    "CollectConfig": "jobs.collectors.config",
    "load_collect_config": "jobs.collectors.config",
    "KeyRing": "jobs.collectors.keys",
    "load_secrets_file": "jobs.collectors.keys",
    "Sweep": "jobs.collectors.runner",
    "load_serp": "jobs.collectors.serp",
    "QueryTemplate": "jobs.collectors.sweeps",
    "TemplateFile": "jobs.collectors.sweeps",
    "expand_templates": "jobs.collectors.sweeps",
    "load_query_set": "jobs.collectors.sweeps",
    "load_template_file": "jobs.collectors.sweeps",
    "stratified_sample": "jobs.collectors.sweeps",
    "EndpointSystem": "jobs.collectors.systems",
    "RequestPolicy": "jobs.collectors.systems",
    "SerpSystem": "jobs.collectors.systems",
    "load_systems": "jobs.collectors.systems",
    "ANSWERS_SCHEMA": "jobs.collectors.tables",
}

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

if TYPE_CHECKING:
    from jobs.collectors.citations import CITATION_SOURCES, ParsedAnswer, links_in_text, parse_answer
    from jobs.collectors.client import ANSWER_STATUSES, CallResult, EndpointClient, Pacer, request_body
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


__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
