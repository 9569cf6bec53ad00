import pytest

from crawler.urls import InvalidURL, canonicalize_url, strip_credentials, url_key


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("HTTP://Example.COM:80/a?b=2&a=1#frag", "http://example.com/a?a=1&b=2"),
        ("https://example.com:443", "https://example.com/"),
        ("https://example.com:8443/x", "https://example.com:8443/x"),
        (
            "https://example.com/p?utm_source=x&utm_medium=y&id=7&fbclid=abc&gclid=1",
            "https://example.com/p?id=7",
        ),
        ("https://example.com/%7euser/caf%c3%a9", "https://example.com/~user/caf%C3%A9"),
        ("https://example.com/café", "https://example.com/caf%C3%A9"),
        ("https://example.com/a%2fb", "https://example.com/a%2Fb"),
        ("https://bücher.de/", "https://xn--bcher-kva.de/"),
        ("  https://example.com/?  ", "https://example.com/"),
        ("https://user:pa%40ss@Example.com:443/x", "https://example.com/x"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
    ],
)
def test_canonical_spellings(raw, canonical):
    assert canonicalize_url(raw) == canonical


def test_url_key_is_stable_across_spellings():
    variants = [
        "https://Example.com/a?x=1&utm_campaign=z",
        "https://example.com:443/a?x=1#top",
        "https://example.com/a?x=1",
    ]
    keys = {url_key(u) for u in variants}
    assert len(keys) == 1
    assert len(keys.pop()) == 20
    assert url_key("https://example.com/a?x=2") != url_key("https://example.com/a?x=1")


@pytest.mark.parametrize(
    "bad", ["", "ftp://example.com/", "mailto:a@b.c", "example.com/page", "http://", "http://x:99999/"]
)
def test_invalid_urls(bad):
    with pytest.raises(InvalidURL):
        canonicalize_url(bad)


@pytest.mark.parametrize(
    ("raw", "stripped"),
    [
        ("https://user:secret@example.com/a?b=1", "https://example.com/a?b=1"),
        ("ftp://anonymous@files.example.org/pub", "ftp://files.example.org/pub"),
        ("http://a:b@c@example.com:8080/", "http://example.com:8080/"),
        ("https://example.com/path@with-at", "https://example.com/path@with-at"),
        ("not a url", "not a url"),
    ],
)
def test_strip_credentials(raw, stripped):
    assert strip_credentials(raw) == stripped
