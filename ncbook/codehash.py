"""The code a result depends on, hashed: every ncbook function, class and constant its run function reaches, each
in a normal form (its syntax tree without docstrings), so that comments, docstrings, formatting and moving code
between modules never make a result stale, and a real change makes stale exactly the results that run it. The
types of annotations are left out of the hashed text too: the package imports ``annotations`` from ``__future__``,
so a function's are strings nothing evaluates, and of a class body's only what they make of a dataclass attribute
counts (a field or a ``ClassVar``); they still count for what code reaches (``cfg: TrainConfig`` reaches the methods
``cfg`` calls)."""

from __future__ import annotations

import ast
import dataclasses
import enum
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
EXECUTION_PATHS = frozenset({"ncbook.train.compiled_step", "ncbook.train.capture_requested",
                             "ncbook.train.stop_here"})
"""Code that chooses how a training step is executed, not what it computes: whether it is compiled
(``NCBOOK_CAPTURE``) and how, and where a run asked to stop (a signal to ``python -m ncbook run``) writes its
checkpoint and ends. Like the device, the first changes float rounding only (the captured step gives the eager
step's weights to float32 rounding, tests/test_train.py) and the second no value (a stopped run resumes to the
identical result), so they are left out of every result's key: their code is not hashed, and a bare call of one
(a statement ``stop_here(step, save)``) is left out of the code that makes it (:func:`_strip_execution_calls`). A
result made with captured steps records them in its provenance (``captured_steps``, ``capture_path``). Keyed by
module and qualified name, so that this commit's hasher reads any earlier commit's code the same way
(``scripts/rekey_results.py``)."""
REFUSALS = frozenset({"ncbook.metrics.refuse_featureless"})
"""Code that refuses bad input and does nothing else: each is a function whose body is only ``if <test>: raise ...``
statements (:func:`refuses_only`, checked when its call is left out), called as a bare statement. It can stop a run
but never change a value, so a result that was made passed it whatever its text: like :data:`EXECUTION_PATHS`, its
code and its bare calls are left out of every key, and a clearer refusal never makes a result stale."""
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
            node.body = kept or [ast.Pass()]  # type: ignore[attr-defined]  # every node that has a body
    return tree


def _strip_annotations(node: ast.AST, in_function: bool = False) -> None:
    """Drop the type annotations that do nothing when the code runs: a function's parameter and return annotations,
    and those of assignments inside a function body (``x: T = v`` is ``x = v`` there; a bare ``self.x: T`` is
    nothing; a bare ``x: T`` keeps its target, which makes ``x`` local). In a class body only what an annotation
    makes of a dataclass's attribute is kept (a field, a ``ClassVar``, an ``InitVar``, ``KW_ONLY``): a field's type
    changes no value (``--set`` reads it to parse a setting, and the configuration's values are in the key)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        args = node.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None:
                arg.annotation = None
        node.returns = None
        in_function = True
    elif isinstance(node, ast.ClassDef):
        in_function = False
        for statement in node.body:
            if isinstance(statement, ast.AnnAssign):
                statement.annotation = ast.Name(id=_dataclass_role(statement.annotation), ctx=ast.Load())
    for name, value in ast.iter_fields(node):
        items = value if isinstance(value, list) else [value]
        if in_function and isinstance(value, list):
            items = [ast.Assign(targets=[s.target], value=s.value) if isinstance(s, ast.AnnAssign) and s.value
                     else s for s in value if not _declares_attribute(s)]
            for s in items:
                if isinstance(s, ast.AnnAssign):
                    s.annotation = None  # type: ignore[assignment]  # a tree to be written, never compiled
            setattr(node, name, items)
        for item in items:
            if isinstance(item, ast.AST):
                _strip_annotations(item, in_function)


def _dataclass_role(annotation: ast.expr) -> str:
    """What a class-body annotation makes of its attribute in a dataclass: ``ClassVar``, ``InitVar``, ``KW_ONLY`` or
    a field (``Field``)."""
    names = {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(annotation) if isinstance(n, ast.Attribute)}
    text = ast.unparse(annotation) if isinstance(annotation, ast.Constant) else ""      # a string annotation
    return next((role for role in ("ClassVar", "InitVar", "KW_ONLY") if role in names or role in text), "Field")


def _declares_attribute(statement: ast.AST) -> bool:
    """Is this a bare annotation of an attribute of a name, ``self.x: T`` (which evaluates nothing but ``self``)?"""
    return (isinstance(statement, ast.AnnAssign) and statement.value is None
            and isinstance(statement.target, ast.Attribute) and isinstance(statement.target.value, ast.Name))


def syntax_tree(source: str) -> ast.AST:
    """Parsed source code (a function's or class's may be indented), docstrings removed."""
    return _strip_docstrings(ast.parse(textwrap.dedent(source)))


NORMAL_FORM_VERSION = 3
"""Bumped whenever :func:`normal_text` changes (which changes every key once). 1: ``ast.dump``, whose text differs
between Pythons; 2: :func:`normal_text`, the same text on every Python from 3.11; 3: without the types of annotations
(:func:`_strip_annotations`), so that typing the code (``mypy``) never makes a result stale."""


def normal_text(node: Any) -> str:
    """A syntax tree written the same on every Python: ``Type(field=value, ...)`` with the fields in name order and
    those that are absent, None or an empty list left out (``ast.dump``'s text is not: 3.12 added ``type_params``,
    3.13 leaves empty fields out, and its positional order follows each version's field list)."""
    if isinstance(node, ast.JoinedStr):
        node = ast.JoinedStr(values=_joined_parts(node.values))
    if isinstance(node, ast.AST):
        fields = ((name, getattr(node, name, None)) for name in sorted(node._fields))
        return type(node).__name__ + "(" + ", ".join(f"{name}={normal_text(value)}" for name, value in fields
                                                     if value is not None and value != []) + ")"
    if isinstance(node, list):
        return "[" + ", ".join(normal_text(item) for item in node) + "]"
    return repr(node)


def _joined_parts(values: list[ast.expr]) -> list[ast.expr]:
    """An f-string's parts with adjacent text merged and empty text dropped (3.12's parser splits the text of an
    f-string differently and leaves an empty ``Constant('')`` at the end of a format spec such as ``{x:{fmt}}``)."""
    out: list[ast.expr] = []
    for value in values:
        text = value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None
        last = out[-1] if out else None
        if text is not None and isinstance(last, ast.Constant) and isinstance(last.value, str):
            out[-1] = ast.Constant(value=last.value + text)
        elif text != "":
            out.append(value)
    return out


def normal_form_of(source: str) -> str:
    """The normal form of source code: its syntax tree without docstrings, positions, comments or the types of
    annotations (:func:`_strip_annotations`)."""
    tree = syntax_tree(source)
    _strip_annotations(tree)
    return normal_text(tree)


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


def _strip_execution_calls(tree: ast.AST, obj: Any) -> None:
    """Drop each statement that is a bare call of :data:`EXECUTION_PATHS` or :data:`REFUSALS` code
    (``stop_here(step + 1, save)``, its value unused), resolved in the module of ``obj``: where a run stops, or what
    it refuses, is not what it computes, and so the code around such a call hashes as it did before the call was
    there."""
    env = vars(sys.modules[obj.__module__])

    def execution_call(statement: ast.stmt) -> bool:
        if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
            return False
        func, chain = statement.value.func, []
        while isinstance(func, ast.Attribute):
            chain.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name):
            return False
        value = env.get(func.id)
        for attr in reversed(chain):
            value = getattr(value, attr, None)
        return unhashed(value)

    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if isinstance(statements, list) and any(execution_call(s) for s in statements):
                kept = [s for s in statements if not execution_call(s)]
                setattr(node, field, kept or ([ast.Pass()] if field == "body" else []))


@functools.cache
def _analysis(obj: Any) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """What is hashed for a function or class (the normal form of its source) and what it refers to, from one parse
    (computed once per object: the experiments share most of their code)."""
    tree = syntax_tree(inspect.getsource(obj))
    _strip_execution_calls(tree, obj)
    refs = tuple(_references(obj, tree))       # annotations included: ``cfg: TrainConfig`` reaches its methods
    _strip_annotations(tree)
    return normal_text(tree), refs


def behind(value: Any) -> list[Any]:
    """The code a referenced value stands for: itself, or what a decorator or wrapper holds (``functools`` caches
    and ``wraps`` wrappers, ``partial``, properties, static and class methods, numba dispatchers), unwrapped to the
    functions whose source is hashed (a ``wraps`` wrapper's own code is in its decorator, which the decorated
    function's source names)."""
    if isinstance(value, property):
        return [f for part in (value.fget, value.fset, value.fdel) if part is not None for f in behind(part)]
    for _ in range(100):                                          # bounded: a wrapper of itself ends it
        if isinstance(value, functools.partial):
            value = value.func
        elif isinstance(value, staticmethod | classmethod):
            value = value.__func__
        elif inspect.isfunction(getattr(value, "py_func", None)):      # a numba-compiled function
            value = value.py_func
        elif getattr(value, "__wrapped__", None) is not None and not isinstance(value, types.ModuleType):
            value = value.__wrapped__
        else:
            break
    return [value]


def _code(value: Any) -> bool:
    """Is this an ncbook function or class (whose source is hashed)? Not the code of :data:`EXECUTION_PATHS` or
    :data:`REFUSALS`."""
    return (inspect.isfunction(value) or inspect.isclass(value)) and ours(value) and not unhashed(value)


def _path(value: Any) -> str:
    return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', '')}"


def execution_path(value: Any) -> bool:
    """Is this code of :data:`EXECUTION_PATHS` (how a step is executed, not what it computes)?"""
    return _path(value) in EXECUTION_PATHS


def unhashed(value: Any) -> bool:
    """Is this code of :data:`EXECUTION_PATHS` or :data:`REFUSALS` (in no key)? A refusal that does more than refuse
    is an error (:func:`refuses_only`)."""
    if _path(value) in REFUSALS:
        if not refuses_only(value):
            raise TypeError(f"{_path(value)} is listed in codehash.REFUSALS but does more than `if ...: raise ...`")
        return True
    return execution_path(value)


def refuses_only(fn: Any) -> bool:
    """Is ``fn``'s body (its docstring aside) only ``if <test>: raise ...`` statements, without ``else``?"""
    body = syntax_tree(inspect.getsource(fn)).body[0].body     # type: ignore[attr-defined]
    return all(isinstance(s, ast.If) and not s.orelse and len(s.body) == 1 and isinstance(s.body[0], ast.Raise)
               for s in body if not isinstance(s, ast.Pass))


def constant_form(value: Any, refs: list[tuple[str, Any]], depth: int = 0) -> str | None:
    """A constant's hashed form: its repr, with the ncbook code inside it (functions, classes, the function of a
    ``partial``, a dataclass instance's class) named and added to ``refs`` to be hashed too; None for a value it
    cannot write (:func:`unseen` lists those)."""
    if depth > 20:
        return None
    if isinstance(value, bool | int | float | complex | str | bytes | type(None) | enum.Enum | types.UnionType
                  | types.GenericAlias):
        return repr(value)
    if isinstance(value, tuple | list | frozenset | set):
        items = [form for v in value if (form := constant_form(v, refs, depth + 1)) is not None]
        if len(items) < len(value):
            return None
        return f"{type(value).__name__}({', '.join(sorted(items) if isinstance(value, set | frozenset) else items)})"
    if isinstance(value, dict):
        pairs = [(constant_form(k, refs, depth + 1), constant_form(v, refs, depth + 1)) for k, v in value.items()]
        written = [f"{k}: {v}" for k, v in pairs if k is not None and v is not None]
        return None if len(written) < len(pairs) else "{" + ", ".join(written) + "}"
    if isinstance(value, functools.partial):
        parts = [form for v in (value.func, value.args, value.keywords)
                 if (form := constant_form(v, refs, depth + 1)) is not None]
        return None if len(parts) < 3 else f"partial({', '.join(parts)})"
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and _code(type(value)):
        refs.append((type(value).__qualname__, type(value)))
        fields = [(f.name, constant_form(getattr(value, f.name), refs, depth + 1)) for f in dataclasses.fields(value)]
        return None if any(v is None for _, v in fields) else (
            f"{type(value).__qualname__}({', '.join(f'{k}={v}' for k, v in fields)})")
    code = [v for v in behind(value) if _code(v)]
    if code:
        refs.extend((v.__qualname__, v) for v in code)
        return "code(" + ", ".join(v.__qualname__ for v in code) + ")"
    if not ours(value) and (inspect.isfunction(value) or inspect.isclass(value) or inspect.isbuiltin(value)):
        return f"{getattr(value, '__module__', '?')}.{value.__qualname__}"   # a library's (its version is recorded)
    return None


def _resolve(obj: Any, tree: ast.AST) -> list[tuple[tuple[str, ...], Any, Any, str]]:
    """Each name chain the code of ``obj`` (parsed: ``tree``) uses, resolved: (chain, value, owning module, name)."""
    module = obj.__module__
    env = {**vars(sys.modules[module]), **_local_imports(tree, module)}
    out = []
    for chain in sorted(_chains(tree)):
        if chain[0] not in env:
            continue
        value, owner, name = env[chain[0]], sys.modules[module], chain[0]
        for attr in chain[1:]:
            if not (isinstance(value, types.ModuleType) and ours(value)):
                break
            owner, name, value = value, attr, getattr(value, attr, None)
        if not isinstance(value, types.ModuleType):
            out.append((chain, value, owner, name))
    return out


def _references(obj: Any, tree: ast.AST) -> list[tuple[str, Any]]:
    """The ncbook functions, classes and module constants a function or class (parsed: ``tree``) refers to, as
    (name, object): code through its decorators and wrappers (:func:`behind`), anything else an ncbook module holds
    as a :class:`Constant` (hashed by :func:`constant_form`)."""
    found: list[tuple[str, Any]] = []
    for _chain, value, owner, name in _resolve(obj, tree):
        code = [v for v in behind(value) if _code(v)]
        if code and not isinstance(value, functools.partial):
            found.extend((v.__qualname__, v) for v in code)
        elif ours(owner) and not (callable(value) and not code and not dataclasses.is_dataclass(value)):
            found.append((name, Constant(value)))
    return found


@dataclasses.dataclass(frozen=True, eq=False)
class Constant:
    """A module constant some code uses, hashed by :func:`constant_form`."""

    value: Any


def unseen(entry: Any) -> list[str]:
    """What ``entry`` reaches in ncbook that the hash cannot see into: objects of ncbook modules that are neither
    code (through any wrapper) nor a constant :func:`constant_form` can write (``"referrer: name (type)"``). Empty
    for every experiment of the registry (a test checks)."""
    out = []
    for name, obj in _walk(entry):
        if isinstance(obj, Constant) and constant_form(obj.value, []) is None:
            out.append(f"{name} ({type(obj.value).__name__})")
        elif not isinstance(obj, Constant):
            tree = syntax_tree(inspect.getsource(obj))
            for chain, value, owner, _ in _resolve(obj, tree):
                if ours(owner) and callable(value) and not [v for v in behind(value) if _code(v)] \
                        and not dataclasses.is_dataclass(value) and ours(value) and not unhashed(value):
                    out.append(f"{obj.__qualname__}: {'.'.join(chain)} ({type(value).__name__})")
    return sorted(set(out))


def _walk(entry: Any) -> list[tuple[str, Any]]:
    """Every (name, function, class or :class:`Constant`) ``entry`` reaches, each once."""
    seen: dict[tuple[str, int], tuple[str, Any]] = {}
    todo = [(entry.__qualname__, entry)]
    while todo:
        name, obj = todo.pop()
        key = (name, id(obj.value) if isinstance(obj, Constant) else id(obj))
        if key in seen:
            continue
        seen[key] = (name, obj)
        if isinstance(obj, Constant):
            refs: list[tuple[str, Any]] = []
            constant_form(obj.value, refs)
            todo.extend(refs)
        else:
            todo.extend(_analysis(obj)[1])
    return list(seen.values())


def reachable(entry: Any) -> list[tuple[str, str]]:
    """Every ncbook function, class and constant ``entry`` reaches, as (name, normal form) in order (``name=form``
    for a constant, :func:`constant_form`; a value it cannot write is hashed by its type and listed by
    :func:`unseen`)."""
    out = set()
    for name, obj in _walk(entry):
        if isinstance(obj, Constant):
            out.add((name, f"{name}={constant_form(obj.value, []) or '<' + type(obj.value).__qualname__ + '>'}"))
        else:
            out.add((name, _analysis(obj)[0]))
    return sorted(out)


@functools.cache
def code_hash(entry: Any) -> str:
    """sha256 of the normal forms of everything ``entry`` reaches, in name order (module names not included)."""
    h = hashlib.sha256()
    for name, form in reachable(entry):
        h.update(name.encode() + b"\0" + form.encode() + b"\0")
    return h.hexdigest()
