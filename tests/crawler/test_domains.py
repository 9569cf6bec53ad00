import pytest

from crawler.domains import domain_category, registered_domain


@pytest.mark.parametrize(
    ("url", "domain", "category"),
    [
        ("https://www.bbc.co.uk/news", "bbc.co.uk", "com"),
        ("https://www.gov.uk/x", "www.gov.uk", "gov"),
        ("https://data.nasa.gov/", "nasa.gov", "gov"),
        ("https://cs.stanford.edu/", "stanford.edu", "edu"),
        ("https://www.ox.ac.uk/", "ox.ac.uk", "edu"),
        ("https://en.wikipedia.org/wiki/X", "wikipedia.org", "org"),
        ("https://www.spiegel.de/", "spiegel.de", "country"),
        ("https://blog.example.info/", "example.info", "other"),
        ("http://127.0.0.2:8080/", "127.0.0.2", "other"),
    ],
)
def test_domain_and_category(url, domain, category):
    assert registered_domain(url) == domain
    assert domain_category(url) == category
