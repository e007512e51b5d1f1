"""The package's imports only point down, the folders are the layers, and
nothing reaches into another module's private state.

Layers, bottom to top, each a folder of ``flake8_mha/`` (issues 11 and 26):

    core/       what torch and einx are (torch_api, einx_api), findings, atomic
                writes, lines and positions; the package root (``__version__``)
    analysis/   flow, values, resolve, events, focus, the program's calls
                (program/), reach, masks/, layout/, heads, gqa, scores
    rules/      one code per module
    lint/       one file's findings: engine, facts, noqa, selection
    app/        what the entry points share: pipeline, cache, config, options,
                discovery, output, fix, notebook, docs (never an entry point)
    frontends/  the entry points: plugin, cli, check, confirm_cli, pytest_plugin

``confirm/`` (runner, worker, witnesses, report, docs) and ``sanitizer.py``
stand beside the stack on the core only (``sanitizer.py`` keeps its place at
the top: ``pytest -p flake8_mha.sanitizer`` is its public name).  The one
module outside its folder's layer is ``confirm/__main__.py``, an entry point
(``python -m flake8_mha.confirm``).  Every import counts, including imports
inside functions.  One thing is not an edge: a package's ``__init__``
importing its own direct submodules (the package is made of them:
``confirm/witnesses/__init__`` collecting the witnesses).  Rule modules are
imported by ``rules.base.all_rules`` through ``pkgutil`` discovery, which is
not an import statement and is not seen here.

Read with ``ast`` (nothing is imported), so a new module lands in a layer by
the folder it is put in.
"""
from __future__ import annotations

import ast
import pathlib
from typing import Dict, Iterator, List, Set, Tuple

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "flake8_mha"
PKG = "flake8_mha"

CORE, ANALYSIS, RULES, LINT, APP, FRONT, CONFIRM, SANITIZER = (
    "core", "analysis", "rules", "lint", "app", "frontends", "confirm", "sanitizer")

# module (or package prefix) -> layer; the longest matching prefix wins
LAYER_OF = {
    PKG: CORE,  # the package root: __version__ and the lazy ``sanitize`` facade
    f"{PKG}.core": CORE,
    f"{PKG}.analysis": ANALYSIS,
    f"{PKG}.rules": RULES,
    f"{PKG}.lint": LINT,
    f"{PKG}.app": APP,
    f"{PKG}.frontends": FRONT,
    f"{PKG}.confirm": CONFIRM,
    f"{PKG}.confirm.__main__": FRONT,
    f"{PKG}.__main__": FRONT,  # ``python -m flake8_mha``: the command
    f"{PKG}.sanitizer": SANITIZER,
}

# which layers each layer may import
MAY_IMPORT = {
    CORE: {CORE},
    ANALYSIS: {CORE, ANALYSIS},
    RULES: {CORE, ANALYSIS, RULES},
    LINT: {CORE, ANALYSIS, RULES, LINT},
    APP: {CORE, ANALYSIS, RULES, LINT, APP, CONFIRM},
    FRONT: {CORE, ANALYSIS, RULES, LINT, APP, FRONT, CONFIRM, SANITIZER},
    CONFIRM: {CORE, CONFIRM},
    SANITIZER: {CORE, SANITIZER},
}

# Edges allowed against the table, each with its reason.
ALLOWED = {
    # the public facade ``flake8_mha.sanitize`` (PEP 562 __getattr__, imported on first use)
    (PKG, f"{PKG}.sanitizer"),
}


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: Dict[str, pathlib.Path] = {
    _module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts}


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def layer(name: str) -> str:
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        found = LAYER_OF.get(".".join(parts[:n]))
        if found is not None:
            return found
    raise KeyError(name)


class Import:
    def __init__(self, source: str, target: str, line: int, names: Tuple[str, ...] = ()):
        self.source, self.target, self.line, self.names = source, target, line, names

    def where(self) -> str:
        return f"{MODULES[self.source].relative_to(ROOT)}:{self.line}"


def _base(source: str, level: int) -> str:
    parts = source.split(".")
    if not _is_package(source):
        parts.pop()
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts)


def imports(source: str) -> Iterator[Import]:
    tree = ast.parse(MODULES[source].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PKG or alias.name.startswith(PKG + "."):
                    target = alias.name
                    while target not in MODULES:
                        target = target.rsplit(".", 1)[0]
                    yield Import(source, target, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                module = _base(source, node.level)
                if node.module:
                    module += "." + node.module
            else:
                module = node.module or ""
            if not (module == PKG or module.startswith(PKG + ".")):
                continue
            names = []
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                if sub in MODULES:  # ``from . import torch_api``: the submodule itself
                    yield Import(source, sub, node.lineno)
                else:
                    names.append(alias.name)
            if names:
                yield Import(source, module, node.lineno, tuple(names))


def _own_submodule(source: str, target: str) -> bool:
    return _is_package(source) and target.rsplit(".", 1)[0] == source


EDGES: List[Import] = [imp for name in MODULES for imp in imports(name)
                       if imp.target != imp.source and not _own_submodule(imp.source, imp.target)]


FOLDERS = {CORE, ANALYSIS, RULES, LINT, APP, FRONT, CONFIRM}


def test_the_top_of_the_package_is_its_layers():
    """Nothing sits beside the layer folders but the package root, its
    ``python -m`` entry and the sanitizer."""
    top = sorted(p.name for p in PACKAGE.iterdir() if p.name != "__pycache__")
    assert top == sorted(["__init__.py", "__main__.py", "sanitizer.py", *FOLDERS])
    for folder in FOLDERS:
        assert (PACKAGE / folder / "__init__.py").is_file(), folder


def test_a_module_is_in_the_layer_of_its_folder():
    strays = [name for name in MODULES
              if name.count(".") >= 2 and layer(name) != name.split(".")[1]
              and name != f"{PKG}.confirm.__main__"]
    assert not strays, strays


def test_every_module_has_a_layer():
    missing = []
    for name in MODULES:
        try:
            layer(name)
        except KeyError:
            missing.append(name)
    assert not missing, f"give these modules a layer in tests/test_layers.py: {missing}"


def test_imports_point_down():
    bad = [f"{imp.where()}: {imp.source} ({layer(imp.source)}) imports {imp.target} "
           f"({layer(imp.target)})"
           for imp in EDGES
           if layer(imp.target) not in MAY_IMPORT[layer(imp.source)]
           and (imp.source, imp.target) not in ALLOWED]
    assert not bad, "upward or sideways imports:\n" + "\n".join(bad)


def _cycles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    on_stack: Set[str] = set()
    stack: List[str] = []
    out: List[List[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_import_cycles():
    graph: Dict[str, Set[str]] = {}
    for imp in EDGES:
        graph.setdefault(imp.source, set()).add(imp.target)
    cycles = _cycles(graph)
    detail = []
    for component in cycles:
        inside = [f"  {imp.where()}: {imp.source} -> {imp.target}" for imp in EDGES
                  if imp.source in component and imp.target in component]
        detail.append(" <-> ".join(component) + "\n" + "\n".join(inside))
    assert not cycles, "import cycles:\n" + "\n".join(detail)


def test_no_private_names_across_modules():
    bad = []
    for imp in EDGES:
        for name in imp.names:
            if name.startswith("_") and not name.startswith("__"):
                bad.append(f"{imp.where()}: {imp.source} imports {name} from {imp.target}")
        # a private module (``rules/_mask_rule.py``) belongs to its own package
        private = [p for p in imp.target.split(".")[1:] if p.startswith("_") and not p.startswith("__")]
        if private and not imp.source.startswith(imp.target.rsplit(".", 1)[0] + "."):
            bad.append(f"{imp.where()}: {imp.source} imports the private module {imp.target}")
    assert not bad, "\n".join(bad)


def _sys_modules_uses(source: str) -> Iterator[int]:
    tree = ast.parse(MODULES[source].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr == "modules"
                and isinstance(node.value, ast.Name) and node.value.id == "sys"):
            yield node.lineno


def test_no_module_reaches_into_others_through_sys_modules():
    bad = [f"{MODULES[name].relative_to(ROOT)}:{line}: sys.modules"
           for name in MODULES for line in _sys_modules_uses(name)]
    assert not bad, "\n".join(bad)


# -- the checker itself --------------------------------------------------------------

def test_the_checker_sees_imports_inside_functions_and_relative_forms():
    found = {(imp.target, imp.names) for imp in imports(f"{PKG}.frontends.check")}
    assert (f"{PKG}.app.docs", ("page",)) in found  # ``from ..app.docs import page`` in explain()
    docs = {(imp.target, imp.names) for imp in imports(f"{PKG}.app.docs")}
    assert (f"{PKG}.confirm.witnesses", ("WITNESSES",)) in docs
    assert (f"{PKG}.rules.base", ("all_rules",)) in docs


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("name,expected", [
    (f"{PKG}.rules.mha002_ignore_mask_to_sdpa", RULES),
    (f"{PKG}.frontends.confirm_cli", FRONT),
    (f"{PKG}.confirm.__main__", FRONT),
    (f"{PKG}.app.config", APP),
    (f"{PKG}.confirm.witnesses._common", CONFIRM),
    (f"{PKG}.analysis.masks", ANALYSIS),
    (f"{PKG}.analysis.program.callsites", ANALYSIS),
])
def test_layer_lookup(name, expected):
    assert layer(name) == expected


MAX_MODULE_LINES = 800


def test_no_module_is_longer_than_a_reader_can_hold():
    long = [f"{path.relative_to(ROOT)}: {n} lines"
            for name, path in MODULES.items()
            for n in [path.read_text(encoding="utf-8").count("\n")]
            if n > MAX_MODULE_LINES]
    assert not long, "\n".join(long)
