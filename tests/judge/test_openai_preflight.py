"""The openai engine's preflight: one request that names what is wrong before a pass starts."""

from __future__ import annotations

import pytest

from judge.config import OpenAIConfig
from judge.engines.openai_http import EndpointUnavailable, preflight
from tests.conftest import free_port
from tests.jobs.loopback import OpenAIJudge
from tests.judge.fault_server import FaultServer


@pytest.fixture
def judge():
    server = OpenAIJudge(key="sk-loopback")
    yield server
    server.stop()


def settings(base_url: str, **fields) -> OpenAIConfig:
    return OpenAIConfig(base_url=base_url, model="loopback-judge", api_key_env="SB_PREFLIGHT_KEY", **fields)


def test_a_closed_port_is_unreachable_at_once():
    port = free_port()
    with pytest.raises(EndpointUnavailable, match=f"127.0.0.1:{port}/v1 is unreachable.*ConnectError"):
        preflight(settings(f"http://127.0.0.1:{port}/v1"))


def test_a_missing_key_names_the_variable(judge, monkeypatch):
    monkeypatch.delenv("SB_PREFLIGHT_KEY", raising=False)
    with pytest.raises(EndpointUnavailable, match=r"HTTP 401: \$SB_PREFLIGHT_KEY is not set"):
        preflight(settings(judge.base_url))
    monkeypatch.setenv("SB_PREFLIGHT_KEY", "sk-wrong")
    with pytest.raises(EndpointUnavailable, match=r"key in \$SB_PREFLIGHT_KEY was refused"):
        preflight(settings(judge.base_url))


def test_an_unknown_model_lists_what_is_served(judge, monkeypatch):
    monkeypatch.setenv("SB_PREFLIGHT_KEY", "sk-loopback")
    preflight(settings(judge.base_url))
    with pytest.raises(EndpointUnavailable, match="does not serve model 'qwen-plus' .*loopback-judge"):
        preflight(settings(judge.base_url).model_copy(update={"model": "qwen-plus"}))


def test_an_endpoint_without_a_model_list_passes_once_it_answers():
    server = FaultServer().start()  # answers chat completions only
    try:
        preflight(settings(server.url))
    finally:
        server.stop()
