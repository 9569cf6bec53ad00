"""The ``sourcebench`` command line: one subcommand per job module.

Each subcommand lives in its own module that exposes ``add_arguments(parser)`` and ``run(args) -> int``;
the same module runs as ``python -m jobs.<name>`` (for ``ray job submit --working-dir .``).
Modules are imported only when their subcommand is used, so a missing optional dependency of one
job never breaks another and ``--help`` stays fast. Bad input, on the command line or in a file, is
printed as one line naming the flag, or the file, line/record and field
(:class:`crawler.errors.InputError`), with exit status 2. Every option's help shows its default.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from crawler.errors import InputError  # not crawler.base: `--version` and `--help` need no pydantic

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
EXIT_BAD_INPUT = 2


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description's layout and shows every option's default (unless its help names it)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if not action.option_strings or action.default is argparse.SUPPRESS or "default" in text.lower():
            return text
        default = action.default
        if default is None or default == []:
            shown = "none"
        elif default is False:
            shown = "off"
        elif default is True:
            shown = "on"
        else:
            shown = "%(default)s"
        return f"{text} (default: {shown})"


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (flag and problem) with exit status 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see {self.prog} --help)\n")


# -- argument types: a bad value is a one-line error naming the flag -----------------------------------
def _number(kind: Callable[[str], Any], name: str, test: Callable[[Any], bool]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {name}, got {text!r}") from None
        if value != value or not test(value):  # NaN fails every test
            raise argparse.ArgumentTypeError(f"expected {name}, got {text!r}")
        return value

    parse.__name__ = name  # argparse names the type in its messages
    return parse


positive_int = _number(int, "an integer >= 1", lambda v: v >= 1)
nonnegative_int = _number(int, "an integer >= 0", lambda v: v >= 0)
positive_float = _number(float, "a number > 0", lambda v: 0 < v < float("inf"))
nonnegative_float = _number(float, "a number >= 0", lambda v: 0 <= v < float("inf"))
finite_float = _number(float, "a number", lambda v: abs(v) < float("inf"))
probability = _number(float, "a number between 0 and 1 (exclusive)", lambda v: 0 < v < 1)


class Deprecated(argparse.Action):
    """An old spelling of a flag: stores into the new flag's destination and says so on stderr."""

    def __init__(self, option_strings: list[str], dest: str, new: str, **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None):
        print(f"{parser.prog}: {option} is deprecated, use {self.new}", file=sys.stderr)
        items = list(getattr(namespace, self.dest, None) or [])
        setattr(namespace, self.dest, [*items, values])


def add_set_argument(parser: argparse.ArgumentParser, example: str) -> None:
    """``--set KEY=VALUE``: the one override path of every command that has a config."""
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override one config field, e.g. {example} (value parsed as YAML; repeatable)",
    )


def dotted_overrides(assignments: Sequence[str]) -> dict[str, Any]:
    """``--set`` assignments as ``{"dotted.key": value}``, values parsed as YAML."""
    from crawler.base import apply_override

    flat: dict[str, Any] = {}
    for assignment in assignments:
        tree: dict[str, Any] = {}
        apply_override(tree, assignment)
        key = assignment.partition("=")[0].strip()
        node: Any = tree
        for part in key.split("."):
            node = node[part.strip()]
        flat[".".join(part.strip() for part in key.split("."))] = node
    return flat


def build_parser(name: str, module_name: str, help_text: str) -> tuple[argparse.ArgumentParser, object]:
    """The argument parser of one job module, shared by the CLI and ``python -m jobs.<name>``."""
    module = importlib.import_module(module_name)
    description = (module.__doc__ or "").strip() or help_text
    parser = Parser(prog=f"sourcebench {name}", description=description)
    module.add_arguments(parser)
    return parser, module


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version

    try:
        return package_version("sourcebench")
    except PackageNotFoundError:
        return "unknown (not installed)"


def usage() -> str:
    lines = [f"  {name:<10} {help_}" for name, (_, help_) in SUBCOMMANDS.items()]
    return (
        "usage: sourcebench <command> [options]   (sourcebench <command> --help for its options)\n\n"
        "commands:\n" + "\n".join(lines) + "\n\noptions:\n  -h, --help  this list\n  --version   the version"
    )


def dispatch(argv: list[str]) -> int:
    if not argv or argv[0] in {"-h", "--help"}:
        print(usage())
        return 0
    if argv[0] == "--version":
        print(f"sourcebench {version()}")
        return 0
    name = argv[0]
    if name not in SUBCOMMANDS:
        what = "option" if name.startswith("-") else "command"
        print(
            f"sourcebench: unknown {what} {name!r}; commands: {', '.join(SUBCOMMANDS)} (sourcebench --help)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    from jobs.ray_runtime import use_loopback_when_local

    use_loopback_when_local()
    module_name, help_text = SUBCOMMANDS[name]
    parser, module = build_parser(name, module_name, help_text)
    try:
        args = parser.parse_args(argv[1:])
    except SystemExit as exc:  # --help, or a usage error already printed as one line
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    try:
        return int(module.run(args) or 0)
    except InputError as exc:
        print(f"sourcebench {name}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        code = dispatch(argv)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader went away (`sourcebench -h | head`): stop quietly; Python would otherwise report
        # the failed flush of stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def run_module(name: str) -> None:
    """Entry for ``if __name__ == "__main__": run_module("<name>")`` in each job module."""
    sys.exit(main([name, *sys.argv[1:]]))


if __name__ == "__main__":
    sys.exit(main())
