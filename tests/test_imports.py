"""Every module of the package imports on its own, first, in a fresh interpreter: no circular import hides
behind the order in which the rest of the suite happens to import things. And the import graph read from the
source has no circle at all: the daemon imports none of its front ends, which use its public face."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import litbridge

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(litbridge.__path__, "litbridge.") if not m.name.endswith("__main__")
)
WINDOWS_ONLY = {"litbridge.pty.windows"}
POSIX_ONLY = {"litbridge.pty.unix"}


def test_every_module_is_found() -> None:
    assert len(MODULES) > 40 and "litbridge.daemon.server" in MODULES and "litbridge.cli.service" in MODULES


@pytest.mark.timeout(300)
def test_each_module_imports_first_in_a_fresh_interpreter() -> None:
    skip = WINDOWS_ONLY if sys.platform != "win32" else POSIX_ONLY
    todo = [m for m in MODULES if m not in skip]
    failures = {}
    for i in range(0, len(todo), 2):  # two at a time: the CI box has two cores
        procs = {
            m: subprocess.Popen(
                [sys.executable, "-c", f"import {m}"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for m in todo[i : i + 2]
        }
        for m, proc in procs.items():
            _, err = proc.communicate(timeout=120)
            if proc.returncode != 0:
                failures[m] = err.strip().splitlines()[-1] if err.strip() else f"exit {proc.returncode}"
    assert failures == {}, failures


# ---------------------------------------------------------------------------------------------------------
# The import graph, read from the source: every `import` a module names, wherever it stands (in a function,
# under `if TYPE_CHECKING:`), so a deferred or typing-only import cannot hide a circle.

SRC = Path(litbridge.__file__).resolve().parent
FRONT_ENDS = ("litbridge.daemon.attach", "litbridge.web", "litbridge.fleet.daemon")
"""What carries connections or commands into the daemon: each uses its public face (`daemon/front.py`)."""


def _module_files() -> dict[str, Path]:
    """Every module of the package: its .py files and its compiled (.pyx) extensions."""
    files = {}
    for path in [*SRC.rglob("*.py"), *SRC.rglob("*.pyx")]:
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        files[name] = path
    return files


def _import_graph() -> dict[str, set[str]]:
    """module -> the package's modules it names. `from pkg import name` is an arrow to `pkg.name` when that
    is a module, else to `pkg` (its `__init__`); `import a.b` to the deepest module of the package named."""
    files = _module_files()

    def known(dotted: str) -> str | None:
        while dotted and dotted not in files:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        if path.suffix == ".pyx":  # a compiled extension: imports none of the package's modules
            graph[name] = set()
            continue
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets.update(known(a.name) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.add(sub if sub in files else known(base))
        graph[name] = {t for t in targets if t is not None and t != name}
    return graph


def _reach(graph: dict[str, set[str]], start: str) -> dict[str, str]:
    """Every module `start` imports, directly or not -> the module that imports it (to print the path)."""
    seen: dict[str, str] = {}
    todo = [start]
    while todo:
        here = todo.pop()
        for there in graph.get(here, ()):
            if there not in seen and there != start:
                seen[there] = here
                todo.append(there)
    return seen


def _path(seen: dict[str, str], start: str, end: str) -> str:
    chain = [end]
    while chain[-1] != start:
        chain.append(seen[chain[-1]])
    return " -> ".join(reversed(chain))


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_import_graph_is_read() -> None:
    """The checks below mean something only if the reader sees arrows that are known to be there."""
    graph = _import_graph()
    assert "litbridge.daemon.attach" in graph["litbridge.daemon.server"]
    assert "litbridge.daemon.front" in graph["litbridge.daemon.attach"]
    assert "litbridge.web" in graph["litbridge.cli.serve"]  # deferred, inside run()
    assert "litbridge.fleet.daemon" in graph["litbridge.cli.serve"]
    assert "litbridge.daemon.notify" in graph["litbridge.cli.serve"]
    assert {"litbridge.daemon.hub", "litbridge.session"} <= graph["litbridge.daemon.front"]  # TYPE_CHECKING
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle_in_the_package() -> None:
    assert _circles(_import_graph()) == []


def test_the_daemon_imports_no_front_end() -> None:
    """daemon/server.py, and all it imports, import neither the web view, the fleet, notifications nor the
    CLI: `cli/serve.py` wires those to the daemon."""
    graph = _import_graph()
    seen = _reach(graph, "litbridge.daemon.server")
    banned = ("litbridge.web", "litbridge.fleet", "litbridge.cli", "litbridge.daemon.notify")
    wrong = [_path(seen, "litbridge.daemon.server", m) for m in sorted(seen) if m.startswith(banned)]
    assert wrong == []


def test_front_ends_use_the_daemons_public_face_only() -> None:
    """Attach, the web view and the fleet link never import daemon/server.py (directly or not)."""
    graph = _import_graph()
    wrong = []
    for start in sorted(m for m in graph if m.startswith(FRONT_ENDS)):
        seen = _reach(graph, start)
        if "litbridge.daemon.server" in seen:
            wrong.append(_path(seen, start, "litbridge.daemon.server"))
    assert wrong == []


def test_the_daemon_runs_without_its_front_ends_loaded() -> None:
    """The same, as the interpreter sees it: a daemon built and started loads no front end."""
    code = (
        "import asyncio, sys, tempfile, os\n"
        "from litbridge.daemon.server import Daemon\n"
        "async def main():\n"
        "    d = Daemon(os.path.join(tempfile.mkdtemp(), 's.sock'))\n"
        "    await d.start()\n"
        "    await d.shutdown()\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m.startswith(('litbridge.web', 'litbridge.fleet', "
        "'litbridge.cli', 'litbridge.daemon.notify'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
