import pytest

from crawler.config import CrawlConfig
from crawler.errors import InputError


def test_defaults_are_safe():
    config = CrawlConfig()
    assert config.network.obey_robots and not config.network.allow_private_networks
    assert config.render.policy == "auto" and config.render.chromium_path == "/usr/bin/chromium"
    assert 1_000_000 <= config.limits.max_bytes <= 10_000_000


def test_yaml_with_crawl_section(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("crawl:\n  politeness: {per_host_concurrency: 2}\n  network: {allowlist: 127.0.0.2}\n"
                    "  ray_resources: {crawler: 1}\n")  # fmt: skip
    config = CrawlConfig.from_yaml(path)
    assert config.politeness.per_host_concurrency == 2
    assert config.network.allowlist == ("127.0.0.2",)
    assert config.ray_resources == {"crawler": 1}


def test_bad_value_names_the_field(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("render:\n  policy: sometimes\n")
    with pytest.raises(InputError) as caught:
        CrawlConfig.from_yaml(path)
    assert caught.value.field == "render.policy" and str(path) in str(caught.value)
    with pytest.raises(InputError, match="limits.timeout_s"):
        CrawlConfig.from_dict({"limits": {"timeout_s": -1}})
    with pytest.raises(InputError, match="typo"):
        CrawlConfig.from_dict({"typo": 1})


def test_render_deadline_must_cover_navigation():
    with pytest.raises(
        InputError, match=r"render.*deadline_s \(20\) must exceed timeout_s \+ settle_ms \(20.5 s\)"
    ):
        CrawlConfig.from_dict({"render": {"deadline_s": 20}})
    assert CrawlConfig.from_dict({"render": {"timeout_s": 5, "deadline_s": 8}}).render.deadline_s == 8
