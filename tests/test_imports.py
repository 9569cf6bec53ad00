"""Every module imports on its own in a fresh interpreter; no import circles; the layers hold.

The static part reads each module's import statements (module level, outside ``TYPE_CHECKING``),
builds the graph of first-party imports and fails on any cycle. The dynamic part imports every
module, each one first, in a fresh interpreter, so a module that only works when another was
imported before it (the symptom of a circle) fails, and checks that importing changes no
environment variable.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.cli import SUBCOMMANDS

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("crawler", "judge", "jobs")
#: What each layer may import (``jobs`` -> ``judge`` -> ``crawler``; nothing imports ``jobs``).
ALLOWED = {"crawler": {"crawler"}, "judge": {"judge", "crawler"}, "jobs": {"jobs", "judge", "crawler"}}


def module_names() -> list[str]:
    names = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


MODULES = module_names()
#: The environment of the fresh interpreters, without what tests/conftest.py sets for the tests' Ray.
CLEAN_ENV = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}


def module_file(name: str) -> Path:
    base = REPO.joinpath(*name.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_at_module_level(name: str, tree: ast.Module) -> set[str]:
    """First-party modules ``name`` imports when it is imported (function bodies run later)."""
    found: set[str] = set()
    package = name if module_file(name).name == "__init__.py" else name.rpartition(".")[0]

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [base])
                    base = base.strip(".")
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    found.add(full if full in MODULES else base)
            elif isinstance(node, ast.If) and not _is_type_checking(node):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)

    visit(tree.body)
    first_party = set()
    for target in found:
        if target.split(".")[0] in PACKAGES:
            parts = target.split(".")  # importing a.b.c runs a/__init__ and a/b/__init__ first
            first_party.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return {m for m in first_party if m in MODULES and m != name}


def import_graph() -> dict[str, set[str]]:
    return {
        name: imported_at_module_level(name, ast.parse(module_file(name).read_text())) for name in MODULES
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for child in graph.get(node, ()):
            if child not in index:
                connect(child)
                low[node] = min(low[node], low[child])
            elif child in on_stack:
                low[node] = min(low[node], index[child])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in graph:
        if node not in index:
            connect(node)
    return found


def test_no_import_circles() -> None:
    graph = import_graph()
    # The parent package edge (a.b -> a) is how Python imports; it is no circle by itself.
    without_parents = {
        name: {m for m in deps if not name.startswith(m + ".")} for name, deps in graph.items()
    }
    assert cycles(without_parents) == []


def test_cycle_finder_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def all_imports(tree: ast.Module) -> set[str]:
    """Every first-party package imported anywhere in a module (functions included)."""
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            roots.add(node.module.split(".")[0])
    return roots & set(PACKAGES)


def test_dependencies_point_one_way() -> None:
    wrong = {
        name: sorted(all_imports(ast.parse(module_file(name).read_text())) - ALLOWED[name.split(".")[0]])
        for name in MODULES
    }
    assert {name: bad for name, bad in wrong.items() if bad} == {}


#: The shared foundation: ``judge`` and ``jobs`` import it from :mod:`crawler.base` only.
FOUNDATION = {"crawler.errors", "crawler.storage"}
#: ``jobs.cli`` handles ``--version`` and ``--help`` before pydantic (which ``crawler.base`` loads).
FOUNDATION_EXCEPTIONS = {"jobs.cli": {"crawler.errors"}}


def test_the_foundation_is_imported_from_crawler_base() -> None:
    direct = {}
    for name in MODULES:
        if name.startswith("crawler"):
            continue
        tree = ast.parse(module_file(name).read_text())
        modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        modules |= {
            alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
        }
        wrong = (modules & FOUNDATION) - FOUNDATION_EXCEPTIONS.get(name, set())
        if wrong:
            direct[name] = sorted(wrong)
    assert direct == {}


def test_test_scaffolding_is_not_shipped() -> None:
    for name in ("tiny_model", "serve", "sample_pages"):
        assert not (REPO / "judge" / f"{name}.py").exists()
        assert (REPO / "tests" / "support" / f"{name}.py").exists()


#: One fresh interpreter imports each module first among the project's modules: before each import it
#: forgets every first-party module (third-party ones stay loaded, which keeps this fast), so a module
#: that only imports after another one (the symptom of a circle) fails here.
EACH_FIRST = """
import importlib, json, os, sys, traceback
results = {}
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m.split('.')[0] in ('crawler', 'judge', 'jobs')]:
        del sys.modules[loaded]
    before = dict(os.environ)
    try:
        importlib.import_module(name)
        error = None
    except Exception:
        error = traceback.format_exc(limit=-3)
    changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))
    results[name] = {"error": error, "environment": changed}
print(json.dumps(results))
"""


def fresh_python(code: str, *args: str, timeout: float = 600) -> object:
    """Run ``code`` in a fresh interpreter of the test environment; the JSON of its last line."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        env=CLEAN_ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    results = fresh_python(EACH_FIRST, *MODULES)
    assert set(results) == set(MODULES)
    assert {name: r["error"] for name, r in results.items() if r["error"]} == {}
    assert {name: r["environment"] for name, r in results.items() if r["environment"]} == {}


def test_importing_jobs_leaves_the_environment_alone() -> None:
    code = "import os; old = dict(os.environ); import jobs.cli, jobs.reduce; print(old == dict(os.environ))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=CLEAN_ENV, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "True", done.stderr


#: Libraries that cost a tenth of a second or more to import and that no command needs for ``--help``.
HEAVY = ("pandas", "pyarrow.dataset", "httpx", "tldextract", "ray", "scrapy", "torch", "vllm", "matplotlib")
#: Commands whose own module works on pandas frames throughout (reduce, report, calibrate) or whose
#: collectors hold an HTTP client (collect) load those at import; every other command's help loads none.
HELP_LOADS = {"reduce": {"pandas"}, "report": {"pandas"}, "calibrate": {"pandas", "pyarrow.dataset"},
              "collect": {"httpx"}}  # fmt: skip
HELP_IMPORTS = """
import contextlib, io, json, sys
from jobs.cli import main
heavy = sys.argv[2:]
sys.argv = ["sourcebench", sys.argv[1], "--help"]
with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
    main()
print(json.dumps(sorted(name for name in heavy if name in sys.modules)))
"""


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_help_loads_no_heavy_library(command: str) -> None:
    """``sourcebench CMD --help`` stays fast (under 1 s): the heavy libraries load where they are used."""
    assert set(fresh_python(HELP_IMPORTS, command, *HEAVY, timeout=120)) == HELP_LOADS.get(command, set())
