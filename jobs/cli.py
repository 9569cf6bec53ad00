"""The ``sourcebench`` command line: one subcommand per job module.

Each subcommand lives in its own module that exposes ``add_arguments(parser)`` and ``run(args) -> int``;
the same module runs as ``python -m jobs.<name>`` (for ``ray job submit --working-dir .``).
Modules are imported only when their subcommand is used, so a missing optional dependency of one
job never breaks another. Bad input (:class:`crawler.errors.InputError`) is printed as one line
naming the file, line/record and field, with exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from crawler.errors import InputError

#: subcommand -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "audit": ("jobs.audit", "citations + queries -> crawl -> judge -> reduce -> report"),
    "crawl": ("jobs.crawl", "fetch and extract the cited pages of a run"),
    "judge": ("jobs.judge", "score a run's pages with a judge engine (or --rescore)"),
    "reduce": ("jobs.reduce", "reduce scores to the official leaderboard files"),
    "report": ("jobs.report", "write the HTML/Markdown report of a run"),
    "costbench": ("jobs.costbench", "measure judge tokens on a sample and project cost"),
    "calibrate": ("jobs.calibrate", "judge vs human agreement (MAE, kappa, alpha) and gating"),
    "collect": ("jobs.collect", "collect answers and citations from generative engines"),
    "export": ("jobs.export", "export a run to official enriched JSON (one file per system)"),
    "extract": ("jobs.extract", "print page records for local HTML files (debugging, BYO HTML)"),
}


def build_parser(name: str, module_name: str, help_text: str) -> tuple[argparse.ArgumentParser, object]:
    """The argument parser of one job module, shared by the CLI and ``python -m jobs.<name>``."""
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(prog=f"sourcebench {name}", description=help_text)
    module.add_arguments(parser)
    return parser, module


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in {"-h", "--help"} or argv[0] not in SUBCOMMANDS:
        lines = [f"  {name:<10} {help_}" for name, (_, help_) in SUBCOMMANDS.items()]
        print("usage: sourcebench <command> [options]\n\ncommands:\n" + "\n".join(lines))
        return 0 if not argv or argv[0] in {"-h", "--help"} else 2
    name = argv[0]
    module_name, help_text = SUBCOMMANDS[name]
    parser, module = build_parser(name, module_name, help_text)
    try:
        return int(module.run(parser.parse_args(argv[1:])) or 0)
    except InputError as exc:
        print(f"sourcebench {name}: {exc}", file=sys.stderr)
        return 2


def run_module(name: str) -> None:
    """Entry for ``if __name__ == "__main__": run_module("<name>")`` in each job module."""
    sys.exit(main([name, *sys.argv[1:]]))


if __name__ == "__main__":
    sys.exit(main())
