"""The signatures of the linted file's functions and classes, read with
Python's ``ast``: what ``callers.py`` binds the project's calls and
constructions to.  The linted file's ``ast`` is the one flake8 made when it
hands it over (``given_tree``), not a second parse.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from .chains import constructor, dotted_name, named_lambda, names_class

UNKNOWN = "<unknown>"  # an argument whose value is not a literal


_GIVEN: Dict[Tuple[int, int], ast.Module] = {}  # the linted file's own ``ast``, by its text


def given_tree(text: Optional[str], tree: Optional[ast.Module]) -> None:
    """The ``ast`` flake8 already made of the linted file's ``text`` (exactly
    that text): read instead of parsing the text again, here and by the
    questions below (a 3 MB file's second parse holds 300 MB more).  One is
    kept, the current file's."""
    _GIVEN.clear()
    if text is not None and tree is not None:
        _GIVEN[(hash(text), len(text))] = tree
    else:  # a file is done (or starts without flake8's tree): the shared trees go too
        _PARSED.clear()


# the last texts parsed here, with their trees: a project file's readers (its
# summaries, constants, score helpers, imports, dicts, bases) each asked for
# a parse of their own (issue 30: torch's ``nn/functional.py`` three times).
# A tree holds about 20 times its text: at most 512 KB of text is kept, and
# only while one linted file is analysed (``given_tree(None, None)``).
_PARSED: Dict[Tuple[int, int], Tuple[str, ast.Module]] = {}
MAX_PARSED_TEXT = 512 * 1024


def parse(text: str) -> ast.Module:
    """``ast.parse(text)``, or the tree given or made for that text (never
    changed: every reader shares it).  Raises what ``ast.parse`` raises."""
    key = (hash(text), len(text))
    got = _GIVEN.get(key)
    if got is not None:
        return got
    kept = _PARSED.get(key)
    if kept is not None and kept[0] == text:
        _PARSED[key] = _PARSED.pop(key)  # the last used is the last dropped
        return kept[1]
    tree = ast.parse(text)
    _PARSED.pop(key, None)
    _PARSED[key] = (text, tree)
    while sum(k[1] for k in _PARSED) > MAX_PARSED_TEXT and len(_PARSED) > 1:
        del _PARSED[next(iter(_PARSED))]  # the oldest
    return tree


def literal(node: ast.AST) -> object:
    if isinstance(node, ast.Constant) and (
        node.value is None or type(node.value) in (bool, int, float, str)
    ):
        return node.value
    return UNKNOWN


class ImportedConstant:
    """An argument that names what ``from <module> import NAME`` brings into
    the calling file ``path``: a module-level constant of that project file
    when it is one (``callers.one_value`` asks), else unknown."""

    __slots__ = ("path", "level", "dotted")

    def __init__(self, path: str, level: int, dotted: str):
        self.path, self.level, self.dotted = path, level, dotted


def constant_reader(tree: ast.Module, path: Optional[str], constants: Dict[str, object]):
    """``literal``, and also a name that stands for a module-level constant
    of the file (``constants``: ``module_constants``) or one a top-level
    ``from ... import`` brings (an ``ImportedConstant``, when ``path`` is
    known): RULES.md's "known statically" counts both.  A name any
    function, lambda or class of the file binds itself is not read, for it
    may be that binding (the file's bindings are read once, when a name
    that could be a constant is first met)."""
    imported: Dict[str, Tuple[int, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module is not None or node.level):
            for a in node.names:
                if a.name != "*":
                    dotted = ".".join(x for x in (node.module, a.name) if x)
                    imported[a.asname or a.name] = (node.level, dotted)
    candidates = set(constants) | set(imported)
    if not candidates:
        return literal
    bindings: List[set] = []

    def read(node: ast.AST) -> object:
        got = literal(node)
        if got != UNKNOWN:
            return got
        attr = None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            # ``from . import config as cfg`` then ``cfg.NUM_KV_HEADS``: the module's constant
            node, attr = node.value, node.attr
        if not isinstance(node, ast.Name) or node.id not in candidates:
            return got
        if not bindings:
            bindings.extend(_bindings(tree))
        local, at_top = bindings
        if node.id in local:
            return UNKNOWN
        if node.id in constants:
            return constants[node.id] if attr is None else UNKNOWN
        if node.id in at_top or path is None:
            return UNKNOWN
        level, dotted = imported[node.id]
        return ImportedConstant(path, level, dotted if attr is None else f"{dotted}.{attr}")

    return read


def _bindings(tree: ast.Module) -> Tuple[set, set]:
    """(the names a function, lambda or class of the file binds, the names
    its top-level statements other than imports bind), in one walk."""
    local: set = set()
    at_top: set = set()
    for stmt in tree.body:
        inner = isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                (local if inner else at_top).add(node.id)
            elif isinstance(node, ast.arg):
                local.add(node.arg)
            elif (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and node is not stmt
            ):
                inner = True  # a definition nested in a top-level statement (``if``): all its names
    return local, at_top


_SIGNATURES: Dict[tuple, tuple] = {}


def init_signature(text: str, cls: str):
    """(parameters after ``self``, {parameter: literal default}) of the
    ``__init__`` of the top-level class ``cls`` in ``text``; None when it has
    none of its own, or takes ``*args`` (a ``**kwargs`` takes what the
    constructions pass by other names: ``built.py`` reads it)."""
    return _init_reading(text, cls)[0]


def init_default_names(text: str, cls: str) -> Dict[str, str]:
    """``{parameter: name}`` for the ``__init__`` parameters of the top-level
    class ``cls`` whose default is a name or a dotted name (``dim=WIDTH``,
    ``heads=config.HEADS``): a constant the project may know."""
    return _init_reading(text, cls)[1]


def _init_reading(text: str, cls: str) -> tuple:
    """(``init_signature``, ``init_default_names``) of one parse of ``text``,
    kept for the texts read last (a construction's class is asked again at
    every construction)."""
    key = (hash(text), len(text), cls)
    if key not in _SIGNATURES:
        if len(_SIGNATURES) > 256:
            del _SIGNATURES[next(iter(_SIGNATURES))]  # the oldest
        _SIGNATURES[key] = _read_init(text, cls)
    return _SIGNATURES[key]


def _read_init(text: str, cls: str) -> tuple:
    try:
        tree = parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, {}
    init = next(
        (
            item
            for node in tree.body
            if isinstance(node, ast.ClassDef) and node.name == cls
            for item in node.body
            if isinstance(item, ast.FunctionDef) and item.name == "__init__"
        ),
        None,
    )
    if init is None:
        return None, {}
    args = init.args
    pos = args.args[1:]
    pairs = list(zip(pos[len(pos) - len(args.defaults) :], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    names = {a.arg: n for a, n in ((a, _dotted(d)) for a, d in pairs) if n is not None}
    if args.vararg or args.posonlyargs:
        return None, names
    params = [a.arg for a in pos] + [a.arg for a in args.kwonlyargs]
    return (params, {a.arg: literal(d) for a, d in pairs}), names


def _dotted(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


# ------------------------------------------------------ calls of a function


_FUNCTION_SIGNATURES: Dict[tuple, Dict[str, object]] = {}  # by text: every key's


def function_signature(text: str, key: str):
    """(positional parameters, keyword-only ones, {parameter: literal
    default}, takes ``*args``, takes ``**kwargs``) of the module-level
    function ``key`` of ``text``, or of a method of a module-level class
    (``Cls.forward``, ``Cls._attend``: parameters after ``self``); None when it is
    decorated, defined more than once, or not there.  The text is parsed once
    for all its keys (a 3 MB generated file asks for a dozen)."""
    cache = (hash(text), len(text))
    if cache not in _FUNCTION_SIGNATURES:
        if len(_FUNCTION_SIGNATURES) > 8:
            del _FUNCTION_SIGNATURES[next(iter(_FUNCTION_SIGNATURES))]  # the oldest
        _FUNCTION_SIGNATURES[cache] = _signatures(text)
    return _FUNCTION_SIGNATURES[cache].get(key)


def _signatures(text: str) -> Dict[str, object]:
    try:
        tree = parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    out: Dict[str, object] = {}
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    top = [n for n in tree.body if isinstance(n, kinds)]
    names = [n.name for n in top]
    bound = [  # ``attend = lambda q, k, v, m=None: ...``: a function of that name
        (n.targets[0].id, n.value) for n in tree.body if named_lambda(n)
    ]
    assigned = [name for name, _ in bound]
    for name, node in bound:
        if name not in names and assigned.count(name) == 1:
            out[name] = _signature_of(node, 0)
    for n in top:
        once = names.count(n.name) == 1
        if isinstance(n, ast.FunctionDef) and once and not n.decorator_list:
            out[n.name] = _signature_of(n, 0)
        if isinstance(n, ast.ClassDef) and once and not n.decorator_list:
            inner = [m for m in n.body if isinstance(m, kinds)]
            inner_names = [m.name for m in inner]
            for m in inner:
                if (
                    isinstance(m, ast.FunctionDef)
                    and inner_names.count(m.name) == 1
                    and not m.decorator_list
                ):
                    out[f"{n.name}.{m.name}"] = _signature_of(m, 1)
    return out


def _signature_of(func, skip: int):  # an ast.FunctionDef or ast.Lambda
    args = func.args
    if args.posonlyargs:
        return None
    pos = args.args[skip:]
    defaults: Dict[str, object] = {}
    for a, d in zip(pos[len(pos) - len(args.defaults) :], args.defaults):
        defaults[a.arg] = literal(d)
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        if d is not None:
            defaults[a.arg] = literal(d)
    return (
        tuple(a.arg for a in pos),
        tuple(a.arg for a in args.kwonlyargs),
        defaults,
        args.vararg is not None,
        args.kwarg is not None,
    )


BUILT_MODULE = "<module>"  # an argument that builds a class there (module_or_unknown)


def module_or_unknown(node: ast.AST) -> object:
    """``BUILT_MODULE`` for an argument that builds a class right there
    (``self_attention=nn.MultiheadAttention(...)``: never None), else
    ``UNKNOWN``."""
    name = constructor(node) or ""
    return BUILT_MODULE if name.rpartition(".")[2][:1].isupper() else UNKNOWN


def built_class(node: ast.AST, path: str) -> object:
    """(the file, the constructor as it writes it) for an argument that
    builds a class right there (``AttentionLayer(FullAttention(False), ...)``),
    else ``UNKNOWN``."""
    name = constructor(node) or ""
    return (path, name) if name.rpartition(".")[2][:1].isupper() else UNKNOWN


built_class.with_path = True  # type: ignore[attr-defined]
built_class.locals = True  # type: ignore[attr-defined]  # ``layer = Layer(...)``, then ``Enc(layer)``


def class_named(node: ast.AST, path: str) -> object:
    """(the file, the class as it writes it) for an argument that names a
    class (``Block(MaskedSelfAttention, dim)``, ``attn_cls=layers.Attention``),
    else ``UNKNOWN``."""
    if names_class(node):
        return (path, dotted_name(node))
    return UNKNOWN


class_named.with_path = True  # type: ignore[attr-defined]
class_named.forwards = True  # type: ignore[attr-defined]  # ``Block(d, attn_cls)``: ``Forwarded``


def literal_defaults(args: ast.arguments) -> Dict[str, Optional[str]]:
    """Parameter -> the default's source when it is a plain constant (None when
    it has another default); parameters without a default are absent."""
    out: Dict[str, Optional[str]] = {}
    pos = args.posonlyargs + args.args
    for a, d in zip(pos[len(pos) - len(args.defaults) :], args.defaults):
        out[a.arg] = _const(d)
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        if d is not None:
            out[a.arg] = _const(d)
    return out


def _const(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float, type(None))):
        return repr(node.value)
    return None


def class_methods(cls: ast.ClassDef) -> List[Tuple[ast.FunctionDef, str]]:
    """Each ``@classmethod`` of a class body, with its first parameter's name."""
    return [
        (item, item.args.args[0].arg)
        for item in cls.body
        if isinstance(item, ast.FunctionDef)
        and item.args.args
        and any(isinstance(d, ast.Name) and d.id == "classmethod" for d in item.decorator_list)
    ]


def noted(node: Optional[ast.AST]) -> Optional[ast.AST]:
    """An annotation as the class it names: ``"Block"`` read as ``Block``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
        return ast.Name(node.value, ast.Load())
    return node
