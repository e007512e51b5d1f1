"""What the project's calls hand a module-level function's parameter, when
it is a module: ``evaluate(model, loader)`` in ``train.py``, with ``model =
Tagger(...)`` there, makes ``model(ids, pad)`` inside ``evaluate`` (another
file) a call of ``Tagger.forward``; ``attend(self.attn, x, pad)`` with
``self.attn = nn.MultiheadAttention(...)`` makes ``mha(x, x, x, ...)`` a call
of torch's module (probe AP's AP06 and AP10).  Every call of the function in
the project must hand one class, read where the call is made:

- a construction right there (``evaluate(Tagger(), loader)``), also with
  ``.eval()``, ``.to(device)`` and the like after it;
- a name bound once, in the calling function or at the top of a script, to
  such a construction;
- ``self.attr``, where the calling method's class builds that attribute from
  one class, or keeps its constructor's parameter there and every
  construction of the class hands it one (``Trainer(Tagger(), loader)``);
- a parameter of the calling module-level function, read again at its own
  calls (``main -> perplexity(model) -> teacher_forced_nll(model)``), up to
  ``MAX_HOPS`` calls up.

A call that hands anything else, splats, or a function passed around as a
value leaves the parameter unknown; so does a parameter whose name says no
module (``module_like``: a callback), and a function more than
``MAX_CALLER_FILES`` files name.  Read with ``ast``; the files read are
dependencies of the cached findings."""

from __future__ import annotations

import ast
import os
from typing import List, Optional, Tuple

from ...core import walk as astwalk
from . import callers
from .chains import dotted_name
from .files import ProjectFiles
from .held_lists import torch_class
from .signatures import built_class, literal, parse

MAX_HOPS = 3  # calls up from the function whose parameter is asked
MAX_CALLER_FILES = 4  # files that name the function, beside its own
# methods that return the module they are called on
SAME_MODULE = frozenset(
    {"eval", "train", "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "requires_grad_"}
)
TORCH = "torch"
PROJECT = "project"


def _tree(path: str) -> Optional[ast.Module]:
    """A project file's ``ast``, through ``signatures.parse``'s trees (kept
    while one linted file is analysed, bounded by their text's size)."""
    try:
        text = callers.read_regular(path, callers.MAX_BYTES).decode("utf-8", "replace")
        return parse(text)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def module_function(tree: ast.Module, name: str) -> Optional[ast.FunctionDef]:
    """The module-level function ``name`` of ``tree``, defined once."""
    found = [
        n
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
    ]
    return found[0] if len(found) == 1 else None


# what a parameter that holds a module is called: its name, or one of the words of
# its name (``model``, ``text_encoder``, ``attn``), ends so; not a mask, a function,
# a class or a name of one (``attn_mask``, ``model_fn``, ``module_cls``)
MODULE_WORDS = ("model", "net", "network", "module", "encoder", "decoder", "attn")
MODULE_WORDS += ("attention", "mha", "layer", "block", "transformer", "mixer", "backbone")
NOT_MODULES = ("mask", "fn", "func", "cls", "class", "key", "name", "names", "type", "path")
NOT_MODULES += ("id", "idx", "config", "cfg", "args", "kwargs", "dim", "size", "kind")


def module_like(name: str) -> bool:
    """Whether a parameter's name says it holds a module (the handed reading
    asks only of those: a callback's calls are not read)."""
    parts = name.lower().strip("_").split("_")
    if parts[-1] in NOT_MODULES:
        return False
    return any(p.endswith(MODULE_WORDS) for p in parts)


def called_params(func: ast.FunctionDef) -> List[str]:
    """The parameters ``func`` calls (``model(x)``) or calls a method of
    (``model.decode(x)``), in their order, that ``module_like`` names."""
    params = [a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs]
    called = set()
    for node in astwalk.own_nodes(func):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                f = f.value
            if isinstance(f, ast.Name) and f.id in params:
                called.add(f.id)
    return [p for p in params if p in called and module_like(p)]


class HandedParams:
    """A mixin of ``callsites.Project``: it reads ``files``, ``path``,
    ``depend``, ``_import_of``, ``_defined`` and ``package_of``."""

    def gate(self, source: str, tree: Optional[ast.Module] = None) -> bool:
        """The project-aware gate (``ProjectFiles.gate``), or: a module-level
        function of the file calls a parameter that the project's calls hand
        a torch attention module, or a project class a summary of which
        reaches a sink (``evaluate(model, loader)``, ``attend(self.attn, x)``)."""
        if tree is None and "def " in source:  # parsed once: both readings read it
            try:
                tree = ast.parse(source)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return False
        if super().gate(source, tree):  # type: ignore[misc]
            return True
        if not self.files or tree is None:
            return False
        return bool(self.handed_functions(tree))

    def handed_functions(self, tree: ast.Module) -> List[str]:
        """The module-level functions of the linted file (its ``tree``) that
        call a parameter the project's calls hand a torch attention module or
        a project class that reaches a sink: the focused parse keeps them
        (``imported_names``), the gate lets their file in."""
        kept = self.__dict__.get("_handed_funcs")
        if kept is not None and kept[0] is tree:
            return kept[1]
        self._gate_tree = tree
        handed = []
        for node in tree.body if self.files else ():
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for param in called_params(node):
                got = self.module_handed(node.name, param)
                if got is not None and (got[0] == TORCH or self.class_reaches(got[1], got[2])):
                    handed.append(node.name)
                    break
        self._handed_funcs = (tree, handed)
        return handed

    def imported_names(self, tree: ast.Module) -> List[str]:
        names = super().imported_names(tree)  # type: ignore[misc]
        return names + self.handed_functions(tree)

    def module_handed(
        self, func: str, param: str, filename: Optional[str] = None, depth: int = 0
    ) -> Optional[tuple]:
        """``(TORCH, qualified name, batch_first)`` or ``(PROJECT, file,
        class)``: the one class every call of the module-level function
        ``func`` of ``filename`` (default: the linted file) hands its
        parameter ``param``; None when there is no call, or they do not say
        one class."""
        filename = filename or self.path
        if not self.files or depth > MAX_HOPS or not module_like(param):
            return None
        key = (filename, func, param)
        memo = self.__dict__.setdefault("_handed_params", {})
        if key in memo:
            return memo[key]
        memo[key] = None  # met again while being read: a cycle of calls
        memo[key] = self._module_handed(filename, func, param, depth)
        return memo[key]

    def _module_handed(self, filename, func, param, depth) -> Optional[tuple]:
        tree = self._ast(filename)
        fdef = module_function(tree, func) if tree is not None else None
        if fdef is None:
            return None
        a = fdef.args
        positions = [x.arg for x in a.posonlyargs + a.args]
        if param not in positions and param not in [x.arg for x in a.kwonlyargs]:
            return None
        found = self._calls_of(filename, func, tree)
        if not found:
            return None
        out = set()
        for where, there, call, fn, cls in found:
            got = self._handed_at(where, there, call, fn, cls, param, positions, depth)
            if got is None:
                return None
            out.add(got)
        if len(out) != 1:
            return None
        self.__dict__.setdefault("_handed_at_lines", {})[(filename, func, param)] = [
            (where, call.lineno) for where, _there, call, _fn, _cls in found
        ]
        return out.pop()

    def _calls_of(self, filename: str, func: str, tree: ast.Module) -> Optional[list]:
        """(file, its tree, the call, the function around it, that function's
        class) for every call of the module-level function ``func`` of
        ``filename``: in its own file and in the files that import it
        (directly, or through a package's ``__init__.py``).
        None when it is passed around as a value, or named in more than
        ``MAX_CALLER_FILES`` files: a helper that many files call is a
        utility, not a model's own step, and reading them all would cost
        every run (torch's own tree)."""
        importers = callers.importers_of(filename) or []
        more = [callers.importers_of(f) or [] for f in importers if f.endswith("__init__.py")]
        files = sorted({f for group in [importers, *more] for f in group} - {filename})
        mentioned = [f for f in files if callers._mentions(f, {func})]
        if len(mentioned) > MAX_CALLER_FILES:
            return None
        out: list = []
        for where in [filename, *mentioned]:
            self.depend(where)
            there = self._ast(where)
            found = _calls_in(there, func) if there is not None else None
            if found is None:
                return None
            if any(via is not None and self._import_of(where, via) is None for *_, via in found):
                return None  # ``x.evaluate(...)`` on something else: a method of that name
            out.extend((where, there, c, fn, cls) for c, fn, cls, _via in found)
        return out

    def _ast(self, path: str) -> Optional[ast.Module]:
        """The ``ast`` of a project file; of the linted file, its own (or the
        one the gate was handed before the analysis owned the file)."""
        if path == self.path:
            return self.own_tree() or self.__dict__.get("_gate_tree")
        return _tree(path)

    def handed_where(self, func: str, param: str) -> str:
        """Where the project's calls hand the linted file's ``func`` its
        ``param`` (``module_handed``'s reading): ``blocks.py:15``, and how many
        more calls."""
        at = self.__dict__.get("_handed_at_lines", {}).get((self.path, func, param)) or []
        if not at:
            return ""
        first = f"{self.relative(at[0][0])}:{at[0][1]}"
        return first + (f" and {len(at) - 1} more" if len(at) > 1 else "")

    def _handed_at(self, where, tree, node, fn, cls, param, positions, depth):
        """The class one call ``node`` (in ``fn``, a method of ``cls`` or
        not) hands ``param``, or None."""
        if any(isinstance(x, ast.Starred) for x in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            return None
        value = next((k.value for k in node.keywords if k.arg == param), None)
        if value is None and param in positions and positions.index(param) < len(node.args):
            value = node.args[positions.index(param)]
        if value is None:
            return None
        return self._class_of(value, where, tree, fn, cls, depth, 0)

    def _class_of(self, expr, where, tree, fn, cls, depth, steps) -> Optional[tuple]:
        while (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in SAME_MODULE
        ):
            expr = expr.func.value
        if isinstance(expr, ast.Call):
            text = dotted_name(expr.func)
            if text is None or not text.rpartition(".")[2][:1].isupper():
                return None
            got = self._named_class(where, tree, text)
            if got is not None and got[0] == TORCH:
                flag = next((k.value for k in expr.keywords if k.arg == "batch_first"), None)
                value = literal(flag) if flag is not None else None
                got = (TORCH, got[1], value if isinstance(value, bool) else None)
            return got
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            if expr.value.id != "self" or cls is None:
                return None
            built = _attr_built(tree, cls, expr.attr)
            kinds = {
                self._init_handed(where, tree, cls, v.id)
                if isinstance(v, ast.Name)
                else self._class_of(v, where, tree, None, None, depth, steps + 1)
                for v in built or [None]
                if v is not None
            }
            return kinds.pop() if len(kinds) == 1 else None
        if not isinstance(expr, ast.Name) or steps > 2:
            return None
        owner = fn if fn is not None else tree
        if fn is not None and expr.id in _params(fn):
            if cls is not None or fn not in tree.body:
                return None  # a method's or a nested function's parameter: not read
            return self.module_handed(fn.name, expr.id, where, depth + 1)
        bound = _bound_once(owner, expr.id)
        if bound is None:
            return None
        return self._class_of(bound, where, tree, fn, cls, depth, steps + 1)

    def _init_handed(self, where: str, tree: ast.Module, cls: str, param: str) -> Optional[tuple]:
        """``self.model = model`` in the ``__init__`` of the class ``cls``
        of ``where``: the one class every construction of ``cls`` in the
        project builds right there for ``model`` (``Trainer(Tagger(), ...)``,
        or a name bound once to one), read through the constructing file's
        imports (``callers.constructions``)."""
        init = _method(tree, cls, "__init__")
        if init is None:
            return None
        a = init.args
        params = [x.arg for x in (a.posonlyargs + a.args)[1:] + a.kwonlyargs]
        if param not in params:
            return None
        got, read = callers.constructions(where, cls, params, None, None, built_class)
        for f in read:
            self.depend(f)
        kinds = set()
        for construction in got or [{}]:
            value = construction.get(param)
            if not isinstance(value, tuple):
                return None
            there = self._ast(value[0])
            kinds.add(self._named_class(value[0], there, value[1]) if there else None)
        return kinds.pop() if len(kinds) == 1 else None

    def _named_class(self, where: str, tree: ast.Module, text: str) -> Optional[tuple]:
        """A class as ``where`` writes it: (PROJECT, file, class) for one of
        the project's, (TORCH, qualified name, None) for torch's attention
        modules, else None."""
        head, _, rest = text.partition(".")
        if not rest and any(isinstance(n, ast.ClassDef) and n.name == head for n in tree.body):
            return (PROJECT, where, head)
        bound = self._import_of(where, head)
        if bound is None:
            return None
        if bound[0] == 0:
            qn = torch_class(text, {head: bound[1]})
            if qn is not None:
                return (TORCH, qn, None)
        dotted = bound[1] + ("." + rest if rest else "")
        loc = self._defined((bound[0], dotted), self.package_of(where))
        if loc is None or "." in loc[1]:
            return None
        return (PROJECT, loc[0], loc[1])


def _params(fn: ast.AST) -> List[str]:
    a = fn.args
    return [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs] + [
        x.arg for x in (a.vararg, a.kwarg) if x is not None
    ]


def _bound_once(owner: ast.AST, name: str) -> Optional[ast.AST]:
    """What ``name`` is bound to in ``owner`` (a function's own body, or a
    module's top level), when one plain assignment binds it and nothing else
    does (a loop, ``with``, an augmented assignment, a tuple target,
    ``global``): the name is stored once, by that assignment."""
    nodes = astwalk.own_nodes(owner) if not isinstance(owner, ast.Module) else _top(owner)
    stores = [
        n
        for n in nodes
        if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
    ]
    if len(stores) != 1 or any(
        isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names for n in nodes
    ):
        return None
    for node in nodes:
        if isinstance(node, ast.Assign) and any(t is stores[0] for t in node.targets):
            return node.value
        if isinstance(node, ast.AnnAssign) and node.target is stores[0]:
            return node.value
    return None


def _method(tree: ast.Module, cls: str, name: str) -> Optional[ast.FunctionDef]:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    return item
    return None


def _attr_built(tree: ast.Module, cls: str, attr: str) -> Optional[List[ast.AST]]:
    """What ``self.<attr>`` is set to in the methods of the top-level class
    ``cls``: constructions (``self.attn = nn.MultiheadAttention(...)``), or
    a name (``self.model = model``, a parameter of its ``__init__``); None
    when the attribute is set otherwise too."""
    found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
    if len(found) != 1:
        return None
    out: List[ast.Call] = []
    for node in ast.walk(found[0]):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, (ast.AnnAssign, ast.AugAssign))
            else []
        )
        for t in targets:
            hit = [
                n
                for n in ast.walk(t)
                if isinstance(n, ast.Attribute)
                and n.attr == attr
                and isinstance(n.value, ast.Name)
                and n.value.id == "self"
            ]
            if not hit:
                continue
            if t is not hit[0] or not isinstance(node, ast.Assign):
                return None
            if not isinstance(node.value, (ast.Call, ast.Name)):
                return None
            out.append(node.value)
    return out or None


def _top(tree: ast.Module) -> List[ast.AST]:
    """The nodes of a module's top level, outside functions and classes
    (``if __name__ == "__main__":`` blocks included)."""
    out: List[ast.AST] = []
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _calls_in(tree: ast.Module, func: str) -> Optional[list]:
    """The calls of ``func`` in ``tree``, in the order of the text, each as
    (the call, the function around it or None, the class that function is a
    method of or None, the name it is called on or None:
    ``evaluation.evaluate(...)``); None when the function is read otherwise
    than called (passed around), or imported under another name."""
    calls = []
    stack: List[Tuple[ast.AST, Optional[ast.AST], Optional[str], Optional[str]]] = [
        (tree, None, None, None)
    ]
    called = set()
    loads = 0
    while stack:
        node, fn, cls, in_class = stack.pop()
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id == func:
                calls.append((node, fn, cls, None))
                called.add(id(f))
            elif isinstance(f, ast.Attribute) and f.attr == func and isinstance(f.value, ast.Name):
                calls.append((node, fn, cls, f.value.id))
        elif isinstance(node, ast.Name) and node.id == func and isinstance(node.ctx, ast.Load):
            loads += 1
        elif isinstance(node, ast.ImportFrom) and any(
            a.name == func and a.asname not in (None, func) for a in node.names
        ):
            return None
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                stack.append((child, fn, cls, child.name))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                stack.append((child, child, in_class, None))
            else:
                stack.append((child, fn, cls, in_class))
    if loads > len(called):
        return None  # ``run = fit``, ``partial(fit, ...)``: called elsewhere
    calls.sort(key=lambda c: (c[0].lineno, c[0].col_offset))  # in the order of the text
    return calls


class GateFiles(HandedParams, ProjectFiles):
    """The project as the flake8 adapter's gate reads it (``ast`` only): its
    files, and what the project's calls hand a function's parameters."""


def reaches_a_sink(source: str, path: str, tree: Optional[ast.Module] = None) -> bool:
    """The project-aware gate for a file on disk (``GateFiles.gate``); False
    for a file not on disk."""
    return os.path.isfile(path) and GateFiles(path).gate(source, tree)
