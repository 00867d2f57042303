"""The import graph keeps the layer line of docs/architecture.md ("Layers"), and has no circle.

Every module of the package is parsed with ``ast`` and every import statement counts: at module
top, inside a function (a lazy import still runs, and still ties the two modules), and inside an
``if TYPE_CHECKING:`` block (a type-only import is still an arrow a reader and mypy follow: a type
a lower layer needs from a higher one belongs lower). ``from pkg import name`` is an arrow to
``pkg.name`` when that is a module, else to ``pkg``. Imports named by a string
(``importlib.import_module`` in cli/main.py's command table) are not seen; they stay in ``cli``.

The line is read from the document itself, so the text and the rule cannot drift apart: one
floor per line, floors separated by ``→``, rooms of one floor by ``|``. A room (a package under
``rocmrevive/``, or a top-level module) may import its own modules and any room on a lower floor;
rooms of the same floor never import each other. A module in no room fails the test: a new
package takes its place on the line first.
"""
from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "rocmrevive"
DOC = REPO / "docs" / "architecture.md"


def modules(pkg: Path = PKG) -> dict[str, Path]:
    out = {}
    for p in sorted(pkg.rglob("*.py")):
        if "data" in p.relative_to(pkg).parts[:1]:
            continue
        name = ".".join(p.relative_to(pkg.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = p
    return out


def _owner(name: str, mods: dict[str, Path]) -> str | None:
    while name:
        if name in mods:
            return name
        name = name.rpartition(".")[0]
    return None


def imports(mods: dict[str, Path]) -> dict[str, dict[str, int]]:
    """module -> {module it imports: line of the first such import}, every import statement."""
    arrows: dict[str, dict[str, int]] = defaultdict(dict)
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                if t == "rocmrevive" or t.startswith("rocmrevive."):
                    to = _owner(t, mods)
                    if to and to != name:
                        arrows[name].setdefault(to, node.lineno)
    return arrows


def circles(arrows: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(arrows):
        if start in index:
            continue
        work = [(start, iter(sorted(arrows.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(arrows.get(w, {})))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def layer_line(doc: Path = DOC) -> list[list[str]]:
    """The floors of the fenced block under "## Layers", top floor first."""
    text = doc.read_text(encoding="utf-8")
    m = re.search(r"^## Layers\n+```\n(.*?)\n```", text, re.M | re.S)
    assert m, f"{doc}: no fenced layer line under '## Layers'"
    line = " ".join(m.group(1).split())
    return [[r.strip() for r in floor.split("|")] for floor in line.split("→")]


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "rocmrevive"


def against_the_line(arrows: dict[str, dict[str, int]], floors: list[list[str]],
                     mods: dict[str, Path]) -> list[str]:
    floor_of = {r: i for i, rooms in enumerate(floors) for r in rooms}
    bad = [f"{mods[m].relative_to(REPO)}: in no room of the layer line ({room(m)})"
           for m in mods if room(m) not in floor_of]
    for a, targets in sorted(arrows.items()):
        for b, line in sorted(targets.items()):
            ra, rb = room(a), room(b)
            if ra == rb or ra not in floor_of or rb not in floor_of:
                continue
            if floor_of[rb] <= floor_of[ra]:
                how = "the same floor" if floor_of[rb] == floor_of[ra] else "a higher floor"
                bad.append(f"{mods[a].relative_to(REPO)}:{line}: {a} imports {b}, on {how}")
    return bad


def test_the_layer_line_names_every_room_once():
    floors = layer_line()
    rooms = [r for f in floors for r in f]
    assert len(rooms) == len(set(rooms)), rooms
    present = {room(m) for m in modules()}
    assert set(rooms) == present, (f"on the line but not in the package: {sorted(set(rooms) - present)}; "
                                   f"in the package but not on the line: {sorted(present - set(rooms))}")


def test_no_import_runs_against_the_layer_line():
    mods = modules()
    bad = against_the_line(imports(mods), layer_line(), mods)
    assert not bad, "imports against docs/architecture.md's layer line:\n" + "\n".join(bad)


def test_no_import_circle():
    found = circles(imports(modules()))
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_checks_see_what_they_must(tmp_path):
    """The reader and both checks on a small package written here: a lazy import inside a
    function, a TYPE_CHECKING import, a relative import and a ``from pkg import module`` are
    each seen; a circle and an arrow up are each reported."""
    pkg = tmp_path / "rocmrevive"
    for d in ("low", "high"):
        (pkg / d).mkdir(parents=True)
        (pkg / d / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "a.py").write_text("def f():\n    from rocmrevive.high import b\n")
    (pkg / "low" / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                      "    from . import d\n")
    (pkg / "low" / "d.py").write_text("from rocmrevive.low.c import x\n")
    (pkg / "high" / "b.py").write_text("import rocmrevive.low.a\n")
    mods = modules(pkg)
    arrows = imports(mods)
    assert arrows["rocmrevive.low.a"] == {"rocmrevive.high.b": 2}
    assert arrows["rocmrevive.low.c"] == {"rocmrevive.low.d": 3}
    assert sorted(map(tuple, circles(arrows))) == [("rocmrevive.high.b", "rocmrevive.low.a"),
                                                   ("rocmrevive.low.c", "rocmrevive.low.d")]
    global REPO
    saved, REPO = REPO, tmp_path
    try:
        bad = against_the_line(arrows, [["high"], ["low", "rocmrevive"]], mods)
    finally:
        REPO = saved
    assert bad == ["rocmrevive/low/a.py:2: rocmrevive.low.a imports rocmrevive.high.b, on a higher floor"]
