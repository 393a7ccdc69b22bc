"""The shape of a folder of the package, counted from the code's imports.

    python tools/import_graph.py awp_pipelines/orchestration/ledger [--json]

Prints the folder's modules (with their lines), the import arrows between them, its floors and longest import
chain, and which modules outside the folder (in the same package) import which inside it. Every import counts:
module-level, inside functions and under `if TYPE_CHECKING:`, absolute and relative. An arrow goes from the
importer to the module it names (`from pkg.mod import name` names `pkg.mod.name` when that is a module, else
`pkg.mod`); a module importing its own folder's `__init__` counts no arrow to it.

Floors: a module that imports nothing in the folder is on floor 1; any other is one floor above the highest module
it imports. The longest chain is a path of arrows through the most modules (as many modules as there are floors).
A loop (modules importing each other, directly or not) has no floor: its modules are listed under `loops`, and
the floors and chain are counted with each loop as one node.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path


def module_name(file: Path, root: Path) -> str:
    """`root/a/b.py` → `a.b`; `root/a/__init__.py` → `a` (`root`: the folder holding the top package)."""
    return ".".join(file.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


def package_root(folder: Path) -> Path:
    """The folder that holds the top package of `folder` (the first parent without an `__init__.py`)."""
    top = folder.resolve()
    while (top.parent / "__init__.py").exists():
        top = top.parent
    return top.parent


def imported_names(source: str, module: str, is_package: bool) -> set[str]:
    """Every dotted name an import of `source` names (`from X import a` as `X.a`), relative ones made absolute
    against `module`."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".") if is_package else module.split(".")[:-1]
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([base] if base else [])])
            # `from X import a` names module X.a when there is one, else X (resolved by the caller).
            names |= {base if alias.name == "*" else f"{base}.{alias.name}" if base else alias.name
                      for alias in node.names}
    return names


@dataclass
class Graph:
    folder: str  # the folder's module name
    lines: dict[str, int]  # module → its lines, for the folder's modules
    arrows: set[tuple[str, str]]  # (importer, imported), both in the folder
    outside: dict[str, set[str]] = field(default_factory=dict)  # outside module → the folder's modules it imports

    def floors(self) -> tuple[dict[str, int], list[list[str]]]:
        """Module → its floor (a loop's modules share one), and the loops (two modules or more each)."""
        loops, component = strongly_connected(set(self.lines), self.arrows)
        below: dict[int, set[int]] = {}
        for a, b in self.arrows:
            if component[a] != component[b]:
                below.setdefault(component[a], set()).add(component[b])
        floor: dict[int, int] = {}

        def floor_of(c: int) -> int:
            if c not in floor:
                floor[c] = 1 + max((floor_of(d) for d in below.get(c, ())), default=0)
            return floor[c]

        return {m: floor_of(component[m]) for m in self.lines}, loops

    def longest_chain(self) -> list[str]:
        """A path of arrows through the most floors, from the top importer down to a module importing none of the
        folder (the first such path in name order; a loop's modules stand as their first)."""
        floors, loops = self.floors()
        if not floors:
            return []
        together = {m: set(loop) for loop in loops for m in loop}
        top = min(m for m, f in floors.items() if f == max(floors.values()))
        chain = [top]
        while floors[chain[-1]] > 1:
            here = together.get(chain[-1], {chain[-1]})
            chain.append(min(b for a, b in self.arrows if a in here and floors[b] == floors[a] - 1))
        return chain

    def summary(self) -> dict[str, object]:
        floors, loops = self.floors()
        return {
            "folder": self.folder,
            "files": len(self.lines),
            "lines": sum(self.lines.values()),
            "arrows": len(self.arrows),
            "floors": max(floors.values(), default=0),
            "longest_chain": self.longest_chain(),
            "loops": loops,
            "modules": {m: {"lines": self.lines[m], "floor": floors[m],
                            "imports": sorted(b for a, b in self.arrows if a == m)} for m in sorted(self.lines)},
            "imported_from_outside": sorted({m for found in self.outside.values() for m in found}),
            "outside_importers": {m: sorted(found) for m, found in sorted(self.outside.items())},
        }


def strongly_connected(nodes: set[str], arrows: set[tuple[str, str]]) -> tuple[list[list[str]], dict[str, int]]:
    """Strongly connected components (Tarjan's): the loops among them (two nodes or more each, sorted), and each
    node's component number. tests/orchestration/test_definitions.py finds the package's import loops with it."""
    out: dict[str, list[str]] = {n: sorted(b for a, b in arrows if a == n) for n in nodes}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    component: dict[str, int] = {}
    loops: list[list[str]] = []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(nodes) + 100))

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in out[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = stack[stack.index(v):]
            del stack[stack.index(v):]
            number = len(set(component.values()))
            component.update({m: number for m in members})
            if len(members) > 1:
                loops.append(sorted(members))

    for node in sorted(nodes):
        if node not in index:
            visit(node)
    return sorted(loops), component


def import_graph(folder: Path) -> Graph:
    """The graph of `folder` (a package folder), and its importers among the rest of its top package."""
    folder = folder.resolve()
    root = package_root(folder)
    top = root / module_name(folder, root).split(".")[0]
    files = {module_name(f, root): f for f in sorted(top.rglob("*.py"))}
    inside_name = module_name(folder, root)

    def inside(module: str) -> bool:
        return module == inside_name or module.startswith(inside_name + ".")

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    lines = {m: len(f.read_text(encoding="utf-8").splitlines()) for m, f in files.items() if inside(m)}
    arrows: set[tuple[str, str]] = set()
    outside: dict[str, set[str]] = {}
    for module, file in files.items():
        targets = {t for n in imported_names(file.read_text(encoding="utf-8"), module, file.name == "__init__.py")
                   if (t := resolve(n)) is not None and t != module and inside(t)}
        if inside(module):
            # The folder's own `__init__` is what importing anything in it runs: not an arrow of its shape.
            arrows |= {(module, t) for t in targets if t != inside_name}
        elif targets:
            outside[module] = targets
    return Graph(inside_name, lines, arrows, outside)


def render(summary: dict[str, object]) -> str:
    modules = summary["modules"]
    assert isinstance(modules, dict)
    prefix = f"{summary['folder']}."
    short = lambda m: m.removeprefix(prefix)  # noqa: E731 - a name for the printout only
    out = [f"{summary['folder']}: {summary['files']} files, {summary['lines']} lines, {summary['arrows']} arrows, "
           f"{summary['floors']} floors",
           "longest chain: " + " → ".join(short(m) for m in summary["longest_chain"]),  # type: ignore[attr-defined]
           f"loops: {summary['loops'] or 'none'}", "", "floor  lines  module  (imports)"]
    for name, info in sorted(modules.items(), key=lambda item: (-item[1]["floor"], item[0])):
        out.append(f"{info['floor']:>5}  {info['lines']:>5}  {short(name)}  ({', '.join(map(short, info['imports']))})")
    importers = summary["outside_importers"]
    assert isinstance(importers, dict)
    imported = summary["imported_from_outside"]
    assert isinstance(imported, list)
    out += ["", f"imported from outside: {len(imported)} of {summary['files']} modules, by {len(importers)} modules"]
    out += [f"  {m}: {', '.join(map(short, found))}" for m, found in importers.items()]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("folder", type=Path, help="a package folder, e.g. awp_pipelines/orchestration/ledger")
    parser.add_argument("--json", action="store_true", help="the figures as JSON")
    args = parser.parse_args(argv)
    if not (args.folder / "__init__.py").is_file():
        parser.error(f"{args.folder}: not a package folder (no __init__.py); name one such as "
                     "awp_pipelines/orchestration/ledger")
    summary = import_graph(args.folder).summary()
    print(json.dumps(summary, indent=2) if args.json else render(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
