"""The package's shape, read from its own imports (every import, the ones inside functions too): the rooms
(mcp_server's subpackages and top-level modules) import each other without a circle, so each has a floor and none
imports one above it; no two modules import each other, directly or round a longer loop; no room imports the faces
(server/, cli/); one place per training method (methods/), and the shared modules never branch on a method's name.

`python tests/test_layout.py` prints the rooms floor by floor."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mcp_server"
FACES = {"server", "cli"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py") if "assets" not in p.parts}


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def unresolved() -> list[str]:
    """Relative imports that name no module or package of mcp_server (a module moved, an import left behind;
    mypy's ignore_missing_imports does not see them)."""
    known = _modules()
    out = []
    for module, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                target = _resolve(module, path.name == "__init__.py", node)
                if target not in known:
                    out.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} ({target})")
    return out


def imports() -> dict[str, set[str]]:
    """module -> the package's modules it imports (``from pkg import name`` names the submodule when there is one)."""
    known = _modules()
    out: dict[str, set[str]] = defaultdict(set)
    for module, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, path.name == "__init__.py", node)
                targets = [f"{target}.{a.name}" if f"{target}.{a.name}" in known else target for a in node.names]
            else:
                continue
            out[module] |= {t for t in targets if t in known and t != module}
    return out


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "mcp_server"


def room_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for module, targets in imports().items():
        for target in targets:
            if room(module) != room(target) and room(module) != "mcp_server":
                edges[room(module)].add(room(target))
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in list(edges):
        if node not in index:
            visit(node)
    return found


def floors(edges: dict[str, set[str]]) -> dict[str, int]:
    """A room's floor: one above the highest room it imports (rooms importing nothing of the package: floor 1)."""
    out: dict[str, int] = {}

    def floor(node: str) -> int:
        if node not in out:
            out[node] = 1 + max((floor(n) for n in edges.get(node, ())), default=0)
        return out[node]

    for node in {*edges, *(n for targets in edges.values() for n in targets)}:
        floor(node)
    return out


def test_the_rooms_import_each_other_without_a_circle_so_none_imports_upward():
    found = cycles(room_edges())
    assert not found, f"rooms that import each other round a loop (one of them imports upward): {found}"


def test_no_modules_import_each_other():
    found = cycles(imports())
    assert not found, f"modules that import each other round a loop: {found}"


def test_every_relative_import_names_a_module_of_the_package():
    assert not unresolved(), unresolved()


def test_no_room_imports_a_face():
    wrong = sorted(f"{room_} -> {face}" for room_, targets in room_edges().items() for face in targets & FACES
                   if room_ not in FACES)
    assert not wrong, f"the faces (server/, cli/) only adapt rooms; these rooms import them: {wrong}"


def test_one_place_per_method_and_no_branch_on_a_methods_name_outside_it():
    from mcp_server.methods import METHODS

    assert set(METHODS) == {"sft", "distill", "grpo", "grpo-env", "dpo"}
    branch = re.compile(r"training\.method\s*(==|!=|in\b)|\bmethod\s*==\s*[\"'](sft|distill|grpo)")
    allowed = {"methods", "config"}  # the methods themselves; the config room's per-method rules (METHOD_RULES)
    found = [f"{path.relative_to(PACKAGE)}:{n}" for path in PACKAGE.rglob("*.py") if "assets" not in path.parts
             and path.relative_to(PACKAGE).parts[0] not in allowed
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if branch.search(line)]
    assert not found, f"ask method_of(cfg) instead of branching on the method's name: {found}"


if __name__ == "__main__":
    edges = room_edges()
    by_floor: dict[int, list[str]] = defaultdict(list)
    for name, level in floors(edges).items():
        by_floor[level].append(name)
    for level in sorted(by_floor, reverse=True):
        print(f"floor {level:2d}: {', '.join(sorted(by_floor[level]))}")
