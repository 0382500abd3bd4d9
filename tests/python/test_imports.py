"""The package's modules import one another without a cycle: a module that needs another's words
imports a module of words (ltsuite.advicebase for the advice), never one that imports it back.

Every import counts, at a module's top or inside a function (a deferred import is still a cycle);
only those under `if TYPE_CHECKING:` are left out, as Python never runs them.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "scripts" / "ltsuite"


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(path: Path) -> set[str]:
    """The package's modules PATH imports (from . import x; from .x import y)."""
    found: set[str] = set()
    names = {p.stem for p in PACKAGE.glob("*.py")}

    def visit(node: ast.AST) -> None:
        if _type_checking_only(node):
            return
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(a.name for a in node.names if a.name in names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found - {path.stem}


def graph() -> dict[str, set[str]]:
    return {p.stem: imports(p) for p in sorted(PACKAGE.glob("*.py")) if p.stem != "__init__"}


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as its modules in order, or None (depth-first search)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := walk(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := walk(node)):
            return found
    return None


def test_the_search_finds_a_cycle_where_there_is_one():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


def test_the_advice_modules_import_the_vocabulary_not_one_another():
    edges = graph()
    assert "advicebase" in edges["steady"] and "advise" not in edges["steady"]
    assert not edges["advicebase"] & {"advise", "steady", "capacity"}


def test_no_module_of_the_package_imports_itself_back():
    assert cycle(graph()) is None
