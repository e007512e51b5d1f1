"""Where the unknown masks of the sink census come from (issue 14).

    python bench/sink_origins.py            # the nine releases of bench/corpus.py
    python bench/sink_origins.py --only timm
    python bench/sink_origins.py --list     # also every unknown sink and its class

For every mask sink of ``bench/corpus.py --sinks`` whose meaning, kind and
shape are all unknown, the mask expression is followed back with Python's
``ast`` (nothing imported): through unary ``~``, subscripts, and tensor
methods that keep the mask (``.to``, ``.bool``, ``.unsqueeze``, ...), and
through local assignments of the enclosing function (up to 4 hops), to its
root, which is classified:

a  a parameter of a function/method nobody in the project calls (public API)
b  a parameter whose callers are in the same file
c  a parameter whose callers are only in other files of the project
d  the return value of a call of a function of the project (d-same / d-other)
e  a parameter of a function/class the project only passes around as a value
   (class-as-parameter, registry dicts, ``attn_layer=Attention``)
f  an expression the analysis does not evaluate (named: attribute, kwargs
   item, torch call, arithmetic, ...)

Callers are found by a project-wide scan of call names (``f(...)``,
``x.f(...)``; for ``forward`` the class's name): a text-level
over-approximation, good enough to say where the work lies, not a call graph.
"""

from __future__ import annotations

import argparse
import ast
import collections
import pathlib
import sys
from typing import Dict, List, Optional, Set, Tuple

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from corpus import SETS, _norm, fetch, py_files  # noqa: E402

_KEEPING = {
    "to", "bool", "float", "half", "long", "int", "type", "type_as", "unsqueeze",
    "squeeze", "expand", "expand_as", "view", "reshape", "repeat", "repeat_interleave",
    "contiguous", "logical_not", "flatten", "transpose", "permute", "detach", "clone",
    "cuda", "byte", "bfloat16",
}  # fmt: skip


_KIND = {
    "BinOp": "arithmetic or & | ^ of tensors",
    "BoolOp": "and/or",
    "Compare": "comparison the analysis does not classify",
    "IfExp": "conditional expression",
    "Constant": "constant",
}


class Index:
    """Per project: which files define, call, and mention each name."""

    def __init__(self):
        self.defs: Dict[str, Set[str]] = collections.defaultdict(set)
        self.calls: Dict[str, Set[str]] = collections.defaultdict(set)
        self.refs: Dict[str, Set[str]] = collections.defaultdict(set)
        self.trees: Dict[str, ast.Module] = {}
        self.modules: Dict[str, Set[str]] = collections.defaultdict(set)  # imported names

    def add(self, rel: str, tree: ast.Module) -> None:
        self.trees[rel] = tree
        called = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    self.modules[rel].add((alias.asname or alias.name).split(".")[0])
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defs[node.name].add(rel)
            elif isinstance(node, ast.Call):
                name = _callee_name(node.func)
                if name:
                    self.calls[name].add(rel)
                    called.add(id(node.func))
        for node in ast.walk(tree):
            if id(node) in called:
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self.refs[node.id].add(rel)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                self.refs[node.attr].add(rel)


_NOT_PROJECT = {"torch", "F", "nn", "np", "numpy", "math", "functional", "einops", "jnp"}


def _project_callee(index: "Index", rel: str, func: ast.AST) -> Optional[str]:
    """The name of a project function a call calls: a bare name defined in the
    project, or ``mod.f`` with ``mod`` a name the file imported (not torch's)."""
    if isinstance(func, ast.Name):
        return func.id if func.id in index.defs else None
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in index.modules.get(rel, set())
        and func.value.id not in _NOT_PROJECT
        and func.attr in index.defs
    ):
        return func.attr
    return None


def _callee_name(func: ast.AST) -> Optional[str]:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _enclosing(tree: ast.Module, line: int):
    """The innermost function containing ``line`` and its class (or None)."""
    best: Tuple[Optional[ast.AST], Optional[ast.ClassDef]] = (None, None)

    def visit(node, cls):
        nonlocal best
        for child in ast.iter_child_nodes(node):
            end = getattr(child, "end_lineno", None)
            if end is None or not (child.lineno <= line <= end):
                continue
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                best = (child, cls)
                visit(child, None)
            elif isinstance(child, ast.ClassDef):
                visit(child, child)
            else:
                visit(child, cls)

    visit(tree, None)
    return best


def _root(expr: ast.AST) -> ast.AST:
    for _ in range(20):
        if isinstance(expr, ast.UnaryOp):
            expr = expr.operand
        elif isinstance(expr, ast.Subscript) and not _is_kwargs_item(expr):
            expr = expr.value
        elif (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in _KEEPING
        ):
            expr = expr.func.value
        elif (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr == "logical_not"
            and expr.args
        ):
            expr = expr.args[0]
        else:
            return expr
    return expr


def _is_kwargs_item(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant)


def _params(func) -> Tuple[Set[str], Set[str]]:
    a = func.args
    named = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    splat = {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    return named, splat


def _assignments(func, name: str, before: int) -> List[ast.AST]:
    out = []
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and node.lineno <= before:
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id == name:
                    out.append(node.value)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.lineno <= before:
            if isinstance(node.target, ast.Name) and node.target.id == name and node.value:
                out.append(node.value)
    return out


def classify(index: Index, rel: str, line: int, text: str) -> Tuple[str, str]:
    try:
        expr = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return "f", "unparsable"
    tree = index.trees.get(rel)
    func, cls = _enclosing(tree, line) if tree is not None else (None, None)
    for _ in range(4):
        root = _root(expr)
        if isinstance(root, ast.Name) and func is not None:
            named, splat = _params(func)
            stores = _assignments(func, root.id, line)
            if root.id in named and not [s for s in stores if not _is_none_fill(s)]:
                return _param_class(index, rel, func, cls)
            if root.id in splat:
                return "f", "*args/**kwargs"
            if len(stores) >= 1:
                expr = stores[-1]
                continue
            return "f", "global or closure name"
        if isinstance(root, ast.Call):
            name = _project_callee(index, rel, root.func)
            if name is not None:
                return "d", "same file" if rel in index.defs[name] else "other file"
            f = root.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                if f.value.id == "self" and rel in index.defs.get(f.attr, ()):
                    return "d", "same file (self.method)"
                if f.value.id == "self":
                    return "f", "call of self.<submodule or attribute>"
            what = f.attr if isinstance(f, ast.Attribute) else ast.unparse(f)[:30]
            return "f", f"torch/tensor op not evaluated: {what}"
        if isinstance(root, ast.Subscript):
            return "f", "dict or kwargs item"
        if isinstance(root, ast.Attribute):
            return "f", "attribute (self.x, buffer, config)"
        return "f", _KIND.get(type(root).__name__, type(root).__name__)
    return "f", "assignment chain > 4"


def _is_none_fill(node: ast.AST) -> bool:
    """``mask = None`` or a conditional default: the parameter is still the origin."""
    return isinstance(node, ast.Constant) and node.value is None


def _param_class(index: Index, rel: str, func, cls) -> Tuple[str, str]:
    if func.name in ("forward", "__call__") and cls is not None:
        name = cls.name
        calls, refs = index.calls.get(name, set()), index.refs.get(name, set())
        what = "module"
    else:
        name = func.name
        calls, refs = index.calls.get(name, set()), index.refs.get(name, set())
        what = "method" if cls is not None else "function"
    if rel in calls:
        return "b", what
    if calls:
        return "c", what
    if refs:
        return "e", what
    return "a", what


def run(projects, listing: bool) -> int:
    import corpus
    from flake8_mha.lint.engine import decode_source

    total: Dict[str, int] = collections.Counter()
    detail: Dict[Tuple[str, str], int] = collections.Counter()
    per_project: Dict[str, Dict[str, int]] = {}
    for name, version in projects:
        root = fetch(name, version)
        index = Index()
        for path in py_files(root):
            rel = f"{_norm(name)}-{version}/{path.relative_to(root / 'src')}"
            try:
                index.add(rel, ast.parse(decode_source(path.read_bytes())))
            except (SyntaxError, ValueError):
                continue
        counts: Dict[str, int] = collections.Counter()
        for rel, line, text in corpus.unknown_sinks([(name, version)]):
            klass, why = classify(index, rel, line, text)
            counts[klass] += 1
            total[klass] += 1
            detail[(klass, why)] += 1
            if listing:
                print(f"{rel}:{line}: {klass} ({why}): {text.strip()[:60]}")
        per_project[f"{name}=={version}"] = counts
    classes = "abcdef"
    print("| project | " + " | ".join(classes) + " | unknown |")
    print("| --- |" + " --- |" * (len(classes) + 1))
    for proj, counts in per_project.items():
        cells = " | ".join(str(counts.get(k, 0)) for k in classes)
        print(f"| {proj} | {cells} | {sum(counts.values())} |")
    cells = " | ".join(str(total.get(k, 0)) for k in classes)
    print(f"| all | {cells} | {sum(total.values())} |")
    print()
    for (klass, why), n in sorted(detail.items()):
        print(f"{klass}  {why:45} {n}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated project names")
    parser.add_argument("--list", action="store_true", help="every unknown sink and its class")
    parser.add_argument("--set", choices=sorted(SETS), default="libs", help="which releases")
    args = parser.parse_args(argv)
    projects = SETS[args.set]
    if args.only:
        keep = {_norm(n) for n in args.only.split(",")}
        projects = [p for p in projects if _norm(p[0]) in keep]
    return run(projects, args.list)


if __name__ == "__main__":
    sys.exit(main())
