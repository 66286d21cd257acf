"""The code a result depends on, hashed: every ncbook function, class and constant its run function reaches, each
in a normal form (its syntax tree without docstrings), so that comments, docstrings, formatting and moving code
between modules never make a result stale, and a real change makes stale exactly the results that run it."""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import importlib.util
import inspect
import sys
import textwrap
import types
from typing import Any

PACKAGE = "ncbook"
_SIMPLE = (bool, int, float, str, bytes, tuple, list, dict, frozenset, type(None))


def ours(obj: Any) -> bool:
    """Is this an ncbook module, or a function or class defined in one?"""
    name = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None)
    return isinstance(name, str) and (name == PACKAGE or name.startswith(PACKAGE + "."))


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """Drop every statement that is a bare string (docstrings, attribute docstrings): they do nothing."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                             and isinstance(s.value.value, str))]
            node.body = kept or [ast.Pass()]
    return tree


def syntax_tree(source: str) -> ast.AST:
    """Parsed source code (a function's or class's may be indented), docstrings removed."""
    return _strip_docstrings(ast.parse(textwrap.dedent(source)))


def _dump(tree: ast.AST) -> str:
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def normal_form_of(source: str) -> str:
    """The normal form of source code: its syntax tree without docstrings, positions or comments."""
    return _dump(syntax_tree(source))


def _local_imports(tree: ast.AST, module: str) -> dict[str, Any]:
    """Names bound by ``from . import x`` / ``from .m import f`` statements inside a function body."""
    env: dict[str, Any] = {}
    package = module.rpartition(".")[0] or module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").startswith(PACKAGE)):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            target = importlib.import_module(base)
            for alias in node.names:
                value = getattr(target, alias.name, None)
                env[alias.asname or alias.name] = (importlib.import_module(f"{base}.{alias.name}") if value is None
                                                   else value)
    return env


def _chains(tree: ast.AST) -> set[tuple[str, ...]]:
    """Every name and dotted attribute chain on a name (``a``, ``a.b.c``) the code refers to."""
    out: set[tuple[str, ...]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add((node.id,))
        elif isinstance(node, ast.Attribute):
            parts, base = [node.attr], node.value
            while isinstance(base, ast.Attribute):
                parts.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name):
                out.add((base.id, *reversed(parts)))
    return out


@functools.cache
def _analysis(obj: Any) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """What is hashed for a function or class (the normal form of its source) and what it refers to, from one parse
    (computed once per object: the experiments share most of their code)."""
    tree = syntax_tree(inspect.getsource(obj))
    return _dump(tree), tuple(_references(obj, tree))


def _references(obj: Any, tree: ast.AST) -> list[tuple[str, Any]]:
    """The ncbook functions, classes and module constants a function or class (parsed: ``tree``) refers to, as
    (name, object)."""
    module = obj.__module__
    env = {**vars(sys.modules[module]), **_local_imports(tree, module)}
    found = []
    for chain in _chains(tree):
        if chain[0] not in env:
            continue
        value, owner, name = env[chain[0]], sys.modules[module], chain[0]
        for attr in chain[1:]:
            if not (isinstance(value, types.ModuleType) and ours(value)):
                break
            owner, name, value = value, attr, getattr(value, attr, None)
        if isinstance(value, types.ModuleType):
            continue
        if inspect.isfunction(getattr(value, "py_func", None)):       # a numba-compiled function: hash its source
            value = value.py_func
        if (inspect.isfunction(value) or inspect.isclass(value)) and ours(value):
            found.append((value.__qualname__, value))
        elif isinstance(value, _SIMPLE) and ours(owner) and not callable(value):
            found.append((name, value))
    return found


def reachable(entry: Any) -> list[tuple[str, str]]:
    """Every ncbook function, class and constant ``entry`` reaches, as (name, normal form) in order (``name=repr``
    for a constant)."""
    seen: dict[tuple[str, int], tuple[str, str]] = {}    # by name and id: equal constants share one object (256)
    todo = [(entry.__qualname__, entry)]
    while todo:
        name, obj = todo.pop()
        if (name, id(obj)) in seen:
            continue
        if inspect.isfunction(obj) or inspect.isclass(obj):
            form, refs = _analysis(obj)
            seen[name, id(obj)] = (name, form)
            todo.extend(refs)
        else:
            seen[name, id(obj)] = (name, f"{name}={obj!r}")
    return sorted(seen.values())


@functools.cache
def code_hash(entry: Any) -> str:
    """sha256 of the normal forms of everything ``entry`` reaches, in name order (module names not included)."""
    h = hashlib.sha256()
    for name, form in reachable(entry):
        h.update(name.encode() + b"\0" + form.encode() + b"\0")
    return h.hexdigest()
