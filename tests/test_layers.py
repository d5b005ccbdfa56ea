"""The house keeps its shape (issue 23): no import circle anywhere in ``app/`` (imports written inside
functions included), the layer contracts hold, and no domain module grows past ~500 lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
FACES = ("app.api", "app.views", "app.cli")  # thin faces; the limit is for the domains and workflows
MAX_LINES = 500


def _cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root) & modules)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child) & modules))))
                    advanced = True
                    break
                if child in on:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_cycle_finder_finds_a_cycle():
    class Fake:
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

        def find_modules_directly_imported_by(self, m):
            return set(self.edges.get(m, ()))

    assert _cycles(Fake(), {"a", "b", "c", "d"}) == [["a", "b", "c"]]


def test_app_has_no_import_cycle():
    graph = grimp.build_graph("app", include_external_packages=False)
    modules = {m for m in graph.modules if m.startswith("app")}
    assert len(modules) > 100
    assert _cycles(graph, modules) == []


def test_layer_contracts_hold():
    """`lint-imports` (import-linter) with the contracts in .importlinter; `make test` runs it too."""
    exe = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run([str(exe)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    assert "0 broken" in run.stdout


def test_a_wrong_import_breaks_the_contract(tmp_path):
    """The contract is not a wish: a storage module importing the audit is refused."""
    cfg = (ROOT / ".importlinter").read_text()
    bad = ROOT / "app" / "storage" / "_layer_probe.py"
    bad.write_text("from app.audit import engine  # noqa: F401\n")
    try:
        exe = Path(sys.executable).with_name("lint-imports")
        run = subprocess.run([str(exe), "--config", str(ROOT / ".importlinter"), "--no-cache"], cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
    finally:
        bad.unlink()
    assert (ROOT / ".importlinter").read_text() == cfg
    assert run.returncode != 0
    assert "app.storage._layer_probe" in run.stdout


def test_no_domain_module_is_over_the_limit():
    big = []
    for path in (ROOT / "app").rglob("*.py"):
        mod = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        if mod.startswith(FACES):
            continue
        n = len(path.read_text().splitlines())
        if n > MAX_LINES:
            big.append((mod, n))
    assert big == []


def test_no_function_level_imports_outside_the_listed_heavy_dependencies():
    exe = Path(sys.executable).with_name("ruff")
    run = subprocess.run([str(exe), "check", "--select", "PLC0415", "app"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
