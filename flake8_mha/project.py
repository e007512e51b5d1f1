"""Reach across files: summaries of the project's own attention wrappers.

A file calls ``attend(q, k, v, mask, is_causal=True)`` imported from its own
project, and ``attend`` hands its parameters to
``F.scaled_dot_product_attention``.  This module finds the file ``attend``
lives in (never importing or running it), reads it with Python's ``ast``, and
summarises, per function, method, and nested function returned by a factory,
which parameters reach which SDPA argument and through what transformation.
The engine then sees the call of ``attend`` as an SDPA call whose arguments
are the caller's (``SdpaCall.through`` names the wrapper), so the SDPA rules
fire at the call site, naming the wrapper's SDPA call.

The project root: the linted file's directory, or, when that directory is a
package (holds ``__init__.py``), the directory above its topmost package (the
``__init__.py`` chain upwards).  Absolute imports resolve below that root,
relative ones against the file's own package.  Only files below the root are
read; nothing outside it is followed (site-packages, torch itself).

What a summary holds is small and JSON-able (``summarise``), so it is cached
on disk by the front end, keyed by the file's bytes and the analyzer version
(``store`` below: any object with ``get(key)``/``put(key, value)``).
See docs/reach.md for what is followed and what is not.
"""

from __future__ import annotations

import ast
import hashlib
import os
from typing import Dict, List, Optional, Tuple

import libcst as cst

from .events import SdpaCall
from .flow import CallSite, DefKind, lookup
from .resolve import Bound
from .torch_api import SDPA_NAME, SDPA_QUALNAME

SUMMARY_VERSION = 2
REEXPORTS = "@reexports"  # the key of an __init__'s re-exports in its summary table
MAX_REEXPORT_HOPS = 3
MAX_FILE_BYTES = 2 * 1024 * 1024
# the SDPA arguments a wrapper's parameter may reach (the ones the rules read)
SINK_ARGS = ("attn_mask", "dropout_p", "is_causal")
_SDPA_POSITIONS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal")
_SDPA_SPELLINGS = (
    SDPA_QUALNAME,
    "torch.nn.functional.scaled_dot_product_attention",
    "torch._C._nn.scaled_dot_product_attention",
)


# --------------------------------------------------------------------------- the root


def project_root(path: str) -> str:
    """The directory above the topmost package holding ``path`` (or its own
    directory when that is not a package)."""
    here = os.path.dirname(os.path.abspath(path))
    while os.path.isfile(os.path.join(here, "__init__.py")):
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return here


def module_parts(path: str, root: str) -> List[str]:
    rel = os.path.relpath(os.path.abspath(path), root)
    parts = rel.replace(os.sep, "/").split("/")
    parts[-1] = os.path.splitext(parts[-1])[0]
    if parts[-1] == "__init__":
        parts.pop()
    return parts


def module_file(root: str, parts: List[str]) -> Optional[str]:
    if not parts or any(not p.isidentifier() for p in parts):
        return None
    base = os.path.join(root, *parts)
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


# --------------------------------------------------------------------------- summaries


def summarise(source: str, package_init: bool = False) -> Dict[str, dict]:
    """``{"attend": {...}, "Attn.forward": {...}, "make_attention()": {...}}``:
    per function (``name``), method (``Class.method``) and factory's returned
    nested function (``name()``), what reaches SDPA.  Functions that reach no
    SDPA argument are left out.  A package's ``__init__.py`` (``package_init``)
    also lists what it re-exports from the project (``from .attention import
    Attention``) under ``REEXPORTS``: ``{name: [level, dotted]}``."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    out: Dict[str, dict] = {}
    if package_init:
        found = _reexports(tree)
        if found:
            out[REEXPORTS] = found
    sdpa_names = _sdpa_names(tree)
    if not sdpa_names[0] and not sdpa_names[1]:
        return out
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _add(out, node.name, node, False, sdpa_names)
            inner = _returned_function(node)
            if inner is not None:
                _add(out, node.name + "()", inner, False, sdpa_names)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    _add(out, f"{node.name}.{item.name}", item, True, sdpa_names)
    return out


def _reexports(tree: ast.Module) -> Dict[str, list]:
    """Names a package's ``__init__`` binds by relative import, at its top
    level (also inside a top-level ``if``/``try``)."""
    out: Dict[str, list] = {}
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.If, ast.Try)):
            stack.extend(node.body)
            stack.extend(getattr(node, "orelse", []))
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            for a in node.names:
                if a.name != "*":
                    dotted = f"{node.module}.{a.name}" if node.module else a.name
                    out[a.asname or a.name] = [node.level, dotted]
    return out


def _add(out, name, func, method, sdpa_names) -> None:
    got = _function_summary(func, method, sdpa_names)
    if got is not None:
        got["name"] = name
        out[name] = got


def _sdpa_names(tree: ast.Module) -> Tuple[set, set]:
    """(names bound to SDPA itself, names bound to torch.nn.functional or torch)."""
    direct, modules = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if full in _SDPA_SPELLINGS:
                    direct.add(a.asname or a.name)
                elif full in ("torch.nn.functional", "torch.nn", "torch._C._nn"):
                    modules.add((a.asname or a.name, full))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "torch":
                    if a.asname:
                        modules.add((a.asname, a.name))
                    else:
                        modules.add(("torch", "torch"))
    return direct, modules


def _dotted(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else base + "." + node.attr
    return None


def _is_sdpa(call: ast.Call, sdpa_names) -> bool:
    direct, modules = sdpa_names
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in direct
    text = _dotted(func)
    if text is None or not text.endswith("." + SDPA_NAME):
        return False
    head, _, rest = text.partition(".")
    for local, full in modules:
        if head == local:
            return f"{full}.{rest}" in _SDPA_SPELLINGS
    return False


def _returned_function(func) -> Optional[ast.FunctionDef]:
    """The nested function a factory returns (``def call(...): ...; return call``)."""
    nested = {
        n.name: n for n in func.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    found = None
    for n in ast.walk(func):
        if isinstance(n, ast.Return) and n.value is not None:
            if isinstance(n.value, ast.Name) and n.value.id in nested:
                if found is not None and found is not nested[n.value.id]:
                    return None
                found = nested[n.value.id]
    return found


def _own_nodes(func):
    """The nodes of ``func``'s body, not those of nested functions or classes."""
    stack = list(func.body)
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(n))


def _function_summary(func, method: bool, sdpa_names) -> Optional[dict]:
    args = func.args
    if args.vararg is not None or args.kwarg is not None:
        return None  # a splat can carry anything: not described
    positional = [a.arg for a in args.posonlyargs + args.args]
    if method:
        deco = {_dotted(d) for d in func.decorator_list}
        if "staticmethod" in deco or not positional:
            return None
        positional = positional[1:]
    kwonly = [a.arg for a in args.kwonlyargs]
    params = set(positional) | set(kwonly)
    defaults = _defaults(args, method)
    calls = [n for n in _own_nodes(func) if isinstance(n, ast.Call) and _is_sdpa(n, sdpa_names)]
    if not calls:
        return None
    stores: Dict[str, List[ast.AST]] = {}
    tests: List[ast.AST] = []
    training = False
    for n in _own_nodes(func):
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With)):
            for t in ast.walk(n):
                if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store):
                    stores.setdefault(t.id, []).append(n)
        elif isinstance(n, ast.NamedExpr):
            stores.setdefault(n.target.id, []).append(n)
        if isinstance(n, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            tests.append(n.test)
        if isinstance(n, ast.Attribute) and n.attr == "training":
            training = True
    reached: Optional[Dict[str, dict]] = None
    line = None
    for call in calls:
        here = {}
        for name, expr in _sdpa_arguments(call).items():
            if name in SINK_ARGS:
                got = _reach(expr, params, stores, 0)
                if got is not None:
                    here[name] = got
        if reached is None:
            reached, line = here, call.lineno
        else:  # several SDPA calls: keep what every one of them agrees on
            reached = {k: v for k, v in reached.items() if here.get(k) == v}
    if not reached:
        return None
    mask = reached.get("attn_mask", {}).get("param")
    flag = reached.get("is_causal", {}).get("param")
    if flag is not None and (
        flag in stores or (mask is not None and (mask in stores or _related(tests, mask, flag)))
    ):
        reached.pop("is_causal")  # a guard or fold-and-clear relates the pair: the wrapper's
    if training:
        reached.pop("dropout_p", None)  # dropout gated on self.training inside
    if not reached:
        return None
    return {
        "line": line,
        "positional": positional,
        "kwonly": kwonly,
        "defaults": {k: v for k, v in defaults.items() if k in params},
        "reach": reached,
    }


def _defaults(args: ast.arguments, method: bool) -> Dict[str, Optional[str]]:
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


def _sdpa_arguments(call: ast.Call) -> Dict[str, ast.AST]:
    out = {}
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred):
            return {}
        if i < len(_SDPA_POSITIONS):
            out[_SDPA_POSITIONS[i]] = a
    for k in call.keywords:
        if k.arg is None:
            return {}
        out[k.arg] = k.value
    return out


def _reach(expr: ast.AST, params: set, stores, depth: int) -> Optional[dict]:
    """``{"param": name, "ops": [...]}`` when ``expr`` is a parameter, unchanged
    or through transformations the rules know; None otherwise."""
    if depth > 8:
        return None
    if isinstance(expr, ast.Name):
        defs = stores.get(expr.id)
        if expr.id in params and not defs:
            return {"param": expr.id, "ops": []}
        if expr.id not in params and defs and len(defs) == 1:
            d = defs[0]
            if (
                isinstance(d, ast.Assign)
                and len(d.targets) == 1
                and isinstance(d.targets[0], ast.Name)
            ):
                return _reach(d.value, params, stores, depth + 1)
        return None
    op = _op(expr)
    if op is None:
        return None
    inner, step = op
    got = _reach(inner, params, stores, depth + 1)
    if got is None:
        return None
    got["ops"] = got["ops"] + [step] if step else got["ops"]
    return got


def _op(expr: ast.AST) -> Optional[Tuple[ast.AST, Optional[list]]]:
    """(operand, step) for a transformation a summary can describe."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Invert):
        return expr.operand, ["invert"]
    if isinstance(expr, ast.Subscript):
        sl = expr.slice
        items = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        if all(_broadcast_item(i) for i in items) and any(_is_none(i) for i in items):
            text = ", ".join(ast.unparse(i) for i in items)
            return expr.value, ["index", text]
        return None
    if not isinstance(expr, ast.Call) or expr.keywords:
        return None
    func = expr.func
    if isinstance(func, ast.Attribute) and _dotted(func) in (
        "torch.logical_not",
        "torch.bitwise_not",
    ):
        if len(expr.args) == 1:
            return expr.args[0], ["invert"]
        return None
    if not isinstance(func, ast.Attribute):
        return None
    name, args = func.attr, expr.args
    if name in ("logical_not", "bitwise_not") and not args:
        return func.value, ["invert"]
    if name == "bool" and not args:
        return func.value, ["bool"]
    if name == "unsqueeze" and len(args) == 1 and _small_int(args[0]) is not None:
        return func.value, ["unsqueeze", _small_int(args[0])]
    if name == "to" and len(args) == 1 and isinstance(args[0], ast.Attribute):
        if args[0].attr == "device":
            return func.value, None  # moved, unchanged
        if _dotted(args[0]) == "torch.bool":
            return func.value, ["bool"]
    return None


def _small_int(node: ast.AST) -> Optional[int]:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _small_int(node.operand)
        return None if v is None else -v
    if isinstance(node, ast.Constant) and type(node.value) is int and abs(node.value) < 8:
        return node.value
    return None


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _broadcast_item(node: ast.AST) -> bool:
    if _is_none(node) or (isinstance(node, ast.Constant) and node.value is Ellipsis):
        return True
    return isinstance(node, ast.Slice) and node.lower is node.upper is node.step is None


def _related(tests: List[ast.AST], mask: str, flag: str) -> bool:
    """A test of the function reads both parameters (an ``assert``, an ``if``)."""
    for t in tests:
        names = {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
        if mask in names and flag in names:
            return True
    return False


# --------------------------------------------------------------------------- the project

# summaries already read in this process (a flake8 run asks for the same
# imported files once per linted file), by summary key
_MEMO: Dict[str, Dict[str, dict]] = {}
MAX_MEMO = 2048


def _valid_table(table) -> bool:
    """A summary table as ``summarise`` makes it (one read from disk may not be)."""
    if not isinstance(table, dict):
        return False
    for name, s in table.items():
        if name == REEXPORTS:
            if not isinstance(s, dict) or not all(
                isinstance(v, list) and len(v) == 2 and type(v[0]) is int and isinstance(v[1], str)
                for v in s.values()
            ):
                return False
            continue
        if not isinstance(s, dict) or not isinstance(name, str):
            return False
        if not (
            isinstance(s.get("line"), int)
            and isinstance(s.get("name"), str)
            and isinstance(s.get("positional"), list)
            and isinstance(s.get("kwonly"), list)
            and all(isinstance(p, str) for p in s["positional"] + s["kwonly"])
            and isinstance(s.get("defaults"), dict)
            and all(v is None or isinstance(v, str) for v in s["defaults"].values())
            and isinstance(s.get("reach"), dict)
        ):
            return False
        for arg, how in s["reach"].items():
            if arg not in SINK_ARGS or not isinstance(how, dict):
                return False
            if not isinstance(how.get("param"), str) or not isinstance(how.get("ops"), list):
                return False
            for step in how["ops"]:
                if not isinstance(step, list) or not step or step[0] not in _OPS:
                    return False
                if step[0] == "index" and not (len(step) == 2 and isinstance(step[1], str)):
                    return False
                if step[0] == "unsqueeze" and not (len(step) == 2 and type(step[1]) is int):
                    return False
    return True


_OPS = ("invert", "index", "bool", "unsqueeze")


class Project:
    """The project around one linted file: its root, and the summaries of the
    project files it imports (read once, through ``store`` when given).
    ``deps`` lists every project file a summary was asked of, with the
    SHA-256 of its bytes, for the results cache's key."""

    def __init__(self, path: str, store=None, version: str = ""):
        self.path = os.path.abspath(path)
        self.root = project_root(path)
        self.package = module_parts(path, self.root)[:-1]
        if os.path.basename(path) == "__init__.py":
            self.package = module_parts(path, self.root)
        self.store = store
        self.version = version
        self._files: Dict[str, Optional[Dict[str, dict]]] = {}
        self.deps: Dict[str, str] = {}
        self._located: Dict[tuple, Optional[Tuple[str, str]]] = {}

    # -- names to files ---------------------------------------------------------
    def locate(
        self, level: int, dotted: str, package: Optional[Tuple[str, ...]] = None
    ) -> Optional[Tuple[str, str]]:
        """(file, object path) for a name the linted file imported: level 1,
        ``attn.attend`` for ``from .attn import attend``; level 0,
        ``models.attn.attend`` for an absolute import.  ``package``: the
        package a relative import is read in (default: the linted file's)."""
        package = tuple(self.package) if package is None else package
        key = (level, dotted, package)
        if key not in self._located:
            self._located[key] = self._locate(level, dotted, list(package))
        return self._located[key]

    def _locate(self, level: int, dotted: str, package: List[str]) -> Optional[Tuple[str, str]]:
        rest = dotted.split(".") if dotted else []
        if level:
            if level - 1 > len(package):
                return None
            base = package[: len(package) - (level - 1)]
        else:
            base = []
        for cut in range(len(rest), -1, -1):  # cut 0: the package's own __init__
            parts = base + rest[:cut]
            found = module_file(self.root, parts)
            if found is not None and os.path.abspath(found) != self.path:
                obj = ".".join(rest[cut:])
                return (found, obj) if obj else None
        return None

    def summaries(self, filename: str) -> Dict[str, dict]:
        if filename in self._files:
            return self._files[filename] or {}
        got: Optional[Dict[str, dict]] = None
        try:
            with open(filename, "rb") as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
        except OSError:
            data = None
        if data is not None and len(data) <= MAX_FILE_BYTES:
            digest = hashlib.sha256(data).hexdigest()
            self.deps[filename] = digest
            key = hashlib.sha256(
                f"{SUMMARY_VERSION}\0{self.version}\0{digest}".encode()
            ).hexdigest()
            got = _MEMO.get(key)
            if got is None and self.store is not None:
                got = self.store.get(key)
                if not _valid_table(got):
                    got = None
            if got is None:
                try:
                    text = _decode(data)
                except (SyntaxError, UnicodeDecodeError, LookupError):
                    text = None
                init = os.path.basename(filename) == "__init__.py"
                got = summarise(text, init) if text is not None else {}
                if self.store is not None:
                    self.store.put(key, got)
            if len(_MEMO) >= MAX_MEMO:
                _MEMO.clear()
            _MEMO[key] = got
        self._files[filename] = got
        return got or {}

    def relative(self, filename: str) -> str:
        return os.path.relpath(filename, self.root).replace(os.sep, "/")

    # -- the call site ------------------------------------------------------------
    def classify(self, site: CallSite, resolver) -> Optional[SdpaCall]:
        """The SDPA call a call of a project wrapper amounts to, or None."""
        found = self._callee(site.node.func, site, resolver)
        if found is None:
            return None
        filename, summary = found
        args = _bind(summary, site.node)
        if args is None:
            return None
        mapped: Dict[str, cst.BaseExpression] = {}
        for sink_arg, how in summary["reach"].items():
            param = how["param"]
            expr = args.get(param)
            if expr is None:
                if param not in summary["defaults"] or summary["defaults"][param] is None:
                    continue
                try:
                    expr = cst.parse_expression(summary["defaults"][param])
                except cst.ParserSyntaxError:
                    continue
            built = _apply(expr, how["ops"])
            if built is not None:
                mapped[sink_arg] = built
        if not mapped:
            return None
        bound = Bound.__new__(Bound)
        bound.args = mapped
        bound.star = bound.double_star = False
        bound.positional_count = 0
        through = {
            "function": summary["name"],
            "file": self.relative(filename),
            "line": summary["line"],
            "params": {k: v["param"] for k, v in summary["reach"].items() if k in mapped},
        }
        return SdpaCall(site, bound, through)

    def _callee(self, func, site: CallSite, resolver) -> Optional[Tuple[str, dict]]:
        env, scope = site.env, site.scope
        target = _imported(func, env, scope)
        if target is not None:
            return self._function(target, call=True)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            cls = resolver.self_class(func, env, scope)
            if cls is None:
                return None
            defs = resolver.attr_defs(cls, func.attr.value)
        elif isinstance(func, cst.Name):
            defs = lookup(func.value, env, scope)
        else:
            return None
        if not defs:
            return None
        found = None
        for d in defs:
            if d.kind != DefKind.ASSIGN or not isinstance(d.node, cst.Call):
                return None
            made = _imported(d.node.func, d.env, d.scope)
            got = self._function(made, call=False) if made is not None else None
            if got is None or (found is not None and got[1] is not found[1]):
                return None
            found = got
        return found

    def _function(self, target: Tuple[int, str], call: bool) -> Optional[Tuple[str, dict]]:
        """``call``: the target is called (a function); otherwise it is
        constructed or made (a class: its forward; a factory: what it returns)."""
        loc = self.locate(*target)
        for _ in range(MAX_REEXPORT_HOPS):
            if loc is None:
                return None
            filename, obj = loc
            table = self.summaries(filename)
            head, _, rest = obj.partition(".")
            again = table.get(REEXPORTS, {}).get(head)
            if again is None or head in table:
                break
            # re-exported by a package's __init__: one hop to where it is defined
            package = tuple(module_parts(filename, self.root))
            loc = self.locate(again[0], again[1] + ("." + rest if rest else ""), package)
        else:
            return None
        if call:
            got = table.get(obj)
            if got is not None and "." in obj:
                return None  # Class.method called unbound: self would shift
        else:
            got = table.get(obj + ".forward") or table.get(obj + "()")
        return (filename, got) if got is not None else None


def _imported(node, env, scope, depth: int = 0) -> Optional[Tuple[int, str]]:
    """(relative level, dotted name) of what an imported name (or an attribute
    of an imported module) is, read from the import statement itself."""
    if depth > 8:
        return None
    if isinstance(node, cst.Attribute):
        base = _imported(node.value, env, scope, depth + 1)
        if base is None:
            return None
        return base[0], (base[1] + "." if base[1] else "") + node.attr.value
    if not isinstance(node, cst.Name):
        return None
    defs = lookup(node.value, env, scope)
    if len(defs) != 1 or defs[0].kind != DefKind.IMPORT:
        return None
    stmt = defs[0].node
    if isinstance(stmt, cst.ImportFrom) and not isinstance(stmt.names, cst.ImportStar):
        module = _cst_dotted(stmt.module) if stmt.module is not None else ""
        for alias in stmt.names:
            bound = alias.asname.name if alias.asname is not None else alias.name
            if isinstance(bound, cst.Name) and bound.value == node.value:
                name = _cst_dotted(alias.name)
                return len(stmt.relative), (module + "." if module else "") + name
        return None
    if isinstance(stmt, cst.Import):
        for alias in stmt.names:
            full = _cst_dotted(alias.name)
            if alias.asname is not None:
                bound = alias.asname.name
                if isinstance(bound, cst.Name) and bound.value == node.value:
                    return 0, full
            elif full.split(".")[0] == node.value:
                return 0, node.value
    return None


def _cst_dotted(node) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return _cst_dotted(node.value) + "." + node.attr.value
    return "?"


def _decode(data: bytes) -> str:
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


def _bind(summary: dict, call: cst.Call) -> Optional[Dict[str, cst.BaseExpression]]:
    """The caller's argument for each parameter it passes; None behind a splat
    or when the call does not fit the signature."""
    positional, kwonly = summary["positional"], summary["kwonly"]
    out: Dict[str, cst.BaseExpression] = {}
    i = 0
    for a in call.args:
        if a.star:
            return None
        if a.keyword is None:
            if i >= len(positional):
                return None
            out[positional[i]] = a.value
            i += 1
        else:
            name = a.keyword.value
            if name in out or (name not in positional and name not in kwonly):
                return None
            out[name] = a.value
    return out


def _apply(expr: cst.BaseExpression, ops: list) -> Optional[cst.BaseExpression]:
    """The caller's argument with the wrapper's transformations applied."""
    for step in ops:
        kind = step[0]
        if kind == "invert":
            expr = cst.UnaryOperation(cst.BitInvert(), _paren(expr))
        elif kind == "index":
            try:
                template = cst.parse_expression(f"_[{step[1]}]")
            except cst.ParserSyntaxError:
                return None
            expr = template.with_changes(value=_paren(expr))
        elif kind in ("bool", "unsqueeze"):
            args = [cst.Arg(cst.Integer(str(step[1])))] if kind == "unsqueeze" else []
            if kind == "unsqueeze" and step[1] < 0:
                args = [cst.Arg(cst.parse_expression(str(step[1])))]
            expr = cst.Call(cst.Attribute(_paren(expr), cst.Name(kind)), args)
        else:
            return None
    return expr


def _paren(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def annotate(report, ev):
    """A rule's report on an SDPA call reached through a wrapper names the
    wrapper's SDPA call (message and evidence ``through``); others unchanged."""
    through = getattr(ev, "through", None)
    if through is None:
        return report
    name = through["function"]
    shown = f"the function {name} returns" if name.endswith("()") else name + "()"
    report.message += (
        f"; the call reaches {SDPA_NAME} at {through['file']}:{through['line']} through {shown}"
    )
    report.evidence["through"] = dict(through)
    return report
