"""The Scrapy side of the crawler: spider, middlewares, settings and the shard subprocess entry.

Imported only inside the shard subprocess (``python -m crawler.fetch.process``): a Twisted reactor
cannot be restarted, so every shard gets a fresh process.
"""
