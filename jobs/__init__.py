"""Jobs: the pipelines (audit, crawl, judge, reduce, report, ...) for Ray and the ``sourcebench`` CLI.

Importing the package changes nothing: the CLI and ``jobs.ray_runtime.ensure_ray`` set up Ray's
environment when a job runs.
"""
