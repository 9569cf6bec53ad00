"""Jobs: the pipelines (audit, crawl, judge, reduce, report, ...) for Ray and the ``sourcebench`` CLI."""

from jobs.ray_runtime import use_loopback_when_local

use_loopback_when_local()
