"""Summaries of a project file's attention wrappers, read with Python's ``ast``
(the file is never imported): per function, method and factory-made nested
function, which parameters reach which SDPA argument and through what
transformation.  ``files.py`` and ``callsites.py`` find the files and uses the summaries at the
call sites; docs/reach.md says what a summary holds and what is not followed.
"""

from __future__ import annotations

import ast
import hashlib
import re
from typing import Dict, List, Optional

from ...core import walk as astwalk
from ...core.lines import lines_naming as _lines_naming, source_lines, spans as _spans
from ...core.torch_api import SDPA_NAME
from . import chains, constructors, fills, forms, handed as handed_forms, held_lists, import_lines
from . import branches, factories, kv_scores, live_defs, order, partial_attrs, signatures, steps
from . import returned_scores
from .chains import BASES, VARIANT, dotted_name, named_lambda, statements  # noqa: F401
from .edges import edges as call_edges
from .module_numbers import module_constants
from .sdpa_names import is_sdpa, sdpa_names_of
from .sizes import size_calls, sizes_table

SUMMARY_VERSION = 101
REEXPORTS = "@reexports"  # the key of an __init__'s re-exports in its summary table
IMPORTS = "@imports"  # the file's imports, where the callees its edges name live
# a ``module_own`` entry's end: the module call passes that causal hint as the literal True
TRUE_HINT = "=True"
ATTRS = "@attrs"  # per class, what kind of module each self.<attr> holds (chains.py)
MODULES = "@modules"  # per function that returns a module it builds: its constructor, as written
TORCH_MODULES = "@torch"  # per function that returns a torch attention module: its class
# per torch subclass built with torch's own arguments (no ``__init__`` of its own): its class
TORCH_BUILT = "@torch-built"
# per torch encoder or decoder layer subclass built with torch's own arguments
# whose own ``forward`` feeds its input to ``self.self_attn`` (``forms.torch_layer``)
TORCH_LAYERS = "@torch-layer"
REGISTRIES = "@registries"  # the file's dicts of classes: name -> "A|B" (chains.KINDS)
# per ``partial`` of a torch module class bound at module level: its arguments
PARTIAL_ARGS = "@torch-partial"
# per function and class: the sizes it hands a torch module it builds (``sizes.py``)
SIZES = "@sizes"
# per function returning a torch module: the batch_first it is built with, a literal
TORCH_BATCH_FIRST = "@torch-batch-first"
# per function and class: the calls of names of other files it hands its parameters (``sizes.py``)
SIZE_CALLS = "@size-calls"
MAX_FILE_BYTES = 2 * 1024 * 1024
# the SDPA arguments a wrapper's parameter may reach (the ones the rules read)
SINK_ARGS = ("attn_mask", "dropout_p", "is_causal", "key", "value")


# --------------------------------------------------------------------------- summaries


def summarise(
    source: str,
    package_init: bool = False,
    screen: bool = True,
    tree: Optional[ast.Module] = None,
    reuse: bool = False,
) -> Dict[str, dict]:
    """``{"attend": {...}, "Attn.forward": {...}, "make_attention()": {...}}``:
    per function (``name``), method (``Class.method``) and factory's returned
    nested function (``name()``), what reaches SDPA.  Functions that reach no
    SDPA argument are left out.  A package's ``__init__.py`` (``package_init``)
    also lists what it re-exports from the project (``from .attention import
    Attention``) under ``REEXPORTS``: ``{name: [level, dotted]}``.

    ``screen``: skip what cannot call SDPA, by its text.  Every spelling of an
    SDPA call holds the word ``scaled_dot_product_attention`` (``F.`` and
    ``torch._C._nn.`` paths end with it, a direct import names it), or, for
    ``from ... import scaled_dot_product_attention as sdpa``, the local name:
    a file without the word has no wrapper (only its re-exports are read), and
    a function whose lines hold neither is not summarised.  Inside torch's own
    tree, where ``import torch`` is a project import, this spares reading
    hundreds of modules (tests/test_summaries_screen.py: the same tables with
    and without).

    ``reuse``: each top-level definition's part of the table is kept for the
    process, keyed by its text and what the file's imports make of it, and
    an unchanged definition's is taken again, moved to its lines (a file
    linted again after an edit; tests/test_reparse.py: the same tables)."""
    mentions = SDPA_NAME in source
    holds_modules = forms.holds_modules(source)
    fills_scores = forms.fills_scores(source)
    # whether anything of the file may reach a sink: its own SDPA calls, torch's
    # modules, fills, injected modules, or a call of what it imports of the project
    may_wrap = (
        mentions
        or holds_modules
        or fills_scores
        or handed_forms.holds_injected(source)
        or _imports_relatively(source)
        or import_lines.imports_project_code(source)
    )
    if screen and not may_wrap:
        return {}  # no wrapper, no import of what may be one, no re-export (relative)
    if tree is None:  # ``tree``: the ``ast`` of exactly ``source``, when the caller has it
        try:
            tree = signatures.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return {}
    out: Dict[str, dict] = {}
    if package_init:
        found = _reexports(tree)
        if found:
            out[REEXPORTS] = found
    sdpa_names = sdpa_names_of(tree)
    direct = mentions and bool(sdpa_names[0] or sdpa_names[1])
    may_call = _lines_naming(source, {SDPA_NAME, *sdpa_names[0]}) if screen and direct else None
    torch_names = forms.torch_names(tree) if holds_modules else {}
    partials = forms.torch_partials(tree, torch_names) if torch_names else {}
    # ``make_attn = partial(nn.MultiheadAttention, ...)``: ``make_attn(d, h)`` builds one
    torch_names = {**torch_names, **{name: qn for name, (qn, _) in partials.items()}}
    # the file's own functions -> the sign of the one value each returns (a
    # fill helper such as ``max_neg_value``); None without any fill in the file
    helpers = fills.helper_signs(tree) if fills_scores else None
    # ``def mask_kv(k, v, keep): return k * m, v * m``: the file's helpers that
    # multiply a parameter's mask into what they return (``fills.kv_helpers``)
    pairs = fills.kv_helpers(tree) if direct else None
    # and its functions that move a tensor's axes, keeping its rows (``split_heads(k)``)
    movers = kv_scores.row_movers(tree.body, False) if direct or helpers is not None else ()
    pairs = kv_scores.Readers(pairs, frozenset(movers))
    attrs: Dict[str, Dict[str, str]] = {}
    # ``PreNorm(dim, Attention(dim))``: the classes that only hand ``**kwargs`` on
    wrappers = chains.transparent_wrappers(tree) if "**" in source else {}
    # the constructor parameters a construction in the file passes (``attn_cls=...``)
    passed = chains.passed_params(tree)
    uncalled = chains.uncalled_setters(tree, source) if "self." in source else {}
    # the file's dicts of classes (``BACKENDS = {"torch": TorchAttention}``)
    kinds_of = forms.registries(tree)
    # and its functions that return a torch module (``self.enc = build_encoder(d, h)``)
    returned = factories.returned_modules(tree)  # each function's, read once
    made = factories.torch_factories(tree, returned, torch_names) if holds_modules else {}
    facts = (
        sdpa_names,
        direct,
        may_call,
        holds_modules,
        torch_names,
        helpers,
        (wrappers, passed, kinds_of, made, returned, uncalled),
        pairs,
    )
    if not reuse:  # a top-level function no summary can keep is not read (``live_defs``)
        words = {SDPA_NAME, *sdpa_names[0], *(live_defs.FILL_WORDS if helpers is not None else ())}
        dead = (
            live_defs.dead_functions(tree, source_lines(source), frozenset(words)) if screen else ()
        )
        for node in tree.body:
            _summarise_node(node, out, attrs, *facts, inherited=_inherited(node, attrs), dead=dead)
    else:  # a file summarised again after an edit: each unchanged definition is kept
        lines = source_lines(source)  # as Python numbers them: not at form feeds
        context = repr((screen, direct, sorted(sdpa_names[0]), sorted(sdpa_names[1])))
        context += repr((holds_modules, sorted(torch_names.items())))
        context += repr(sorted(helpers.items()) if helpers is not None else None)
        context += repr(pairs)
        context += repr(sorted(wrappers.items()))
        context += repr(sorted((k, sorted(map(str, v))) for k, v in passed.items()))
        context += repr((sorted(kinds_of.items()), sorted(made.items())))
        context += repr(sorted((k, sorted(v)) for k, v in uncalled.items()))
        for node in tree.body:
            if isinstance(node, _DEFINITIONS) or named_lambda(node):
                _reused(node, lines, context, out, attrs, facts)
    branches.branch_functions(tree, out, lambda f, table: _summarise_node(f, table, {}, *facts))
    forms.add_partials(
        tree, out, lambda e: direct and is_sdpa(ast.Call(func=e, args=[], keywords=[]), sdpa_names)
    )
    forms.add_aliases(tree, out)
    imported = chains.imports(tree)
    _keep_reaching(out, imported, attrs)
    if BASES in out:  # a base whose forward may reach a sink: this file's, or the project's
        kept = {
            cls: [b for b in bases if chains.may_be_project_class(b, imported, out, out[BASES])]
            for cls, bases in out[BASES].items()
        }
        out[BASES] = {cls: bases for cls, bases in kept.items() if bases}
        if not out[BASES]:
            del out[BASES]
    # (after the bases: a class whose bases are all outside the project, a
    # ``NamedTuple``, inherits no ``forward`` to summarise)
    if MODULES in out:  # a factory of a module whose forward may reach a sink
        modules = {
            f: ctor
            for f, ctor in out[MODULES].items()
            if chains.may_be_project_class(
                ctor.removesuffix(held_lists.ITEMS), imported, out, out.get(BASES, {})
            )
        }
        if modules:
            out[MODULES] = modules
        else:
            del out[MODULES]
    if kinds_of and may_wrap:  # a file that can hold no wrapper lists no registry
        out[REGISTRIES] = kinds_of
    for name, (qn, given) in partials.items():
        out.setdefault(TORCH_MODULES, {})[name] = qn
        out.setdefault(TORCH_BUILT, {})[name] = qn
        out.setdefault(PARTIAL_ARGS, {})[name] = given
    constants = module_constants(tree)
    sizes = sizes_table(tree, torch_names, constants) if torch_names else {}
    if sizes:
        out[SIZES] = sizes
    handoffs = size_calls(tree, constants, imported)
    if handoffs:
        out[SIZE_CALLS] = handoffs
    if (
        BASES in out
        or MODULES in out
        or SIZE_CALLS in out
        or any(v.get("edges") for k, v in out.items() if not k.startswith("@"))
    ):
        out[IMPORTS] = imported
        if attrs:
            out[ATTRS] = attrs
    return out


def _keep_reaching(out: Dict[str, dict], imported, attrs) -> None:
    """Drop the entries that reach no sink and the edges into them: an entry
    is kept when it reaches a sink itself, or by an edge into an entry kept,
    or into what may be the project's code elsewhere (``chains.may_reach``).
    The least such set: functions that only call each other (a recursive
    helper of torch's ``nn/utils/memory_format.py``) reach nothing."""
    keys = [k for k in out if not k.startswith("@")]
    live = {k: out[k] for k in keys if out[k]["reach"]}
    live[BASES] = out.get(BASES, {})  # what the file's classes inherit (``may_reach``)
    grown = True
    while grown:
        grown = False
        for key in keys:
            got = out[key]
            if key not in live and any(
                chains.may_reach(e, got, imported, attrs, live) for e in got.get("edges", ())
            ):
                live[key] = got
                grown = True
    for key in keys:
        if key not in live:
            del out[key]
            continue
        got = out[key]
        edges = got.get("edges", ())
        kept = [e for e in edges if chains.may_reach(e, got, imported, attrs, live)]
        if kept:
            got["edges"] = kept
        elif "edges" in got:
            del got["edges"]


# ``from .x import y`` / ``from .. import y``, also across a backslash continuation;
# the word's start is tested apart (``_imports_relatively``): a pattern that starts
# with a literal is searched for that literal, one that starts with ``\b`` is tried
# at every position, a hundred times slower
_RELATIVE_IMPORT = re.compile(r"from[ \t\f\\\r\n]+\.")


def _imports_relatively(source: str) -> bool:
    for m in _RELATIVE_IMPORT.finditer(source):
        before = source[m.start() - 1] if m.start() else " "
        if not (before.isalnum() or before == "_"):
            return True
    return False


def _summarise_node(
    node,
    out,
    attrs,
    sdpa_names,
    direct,
    may_call,
    holds_modules,
    torch_names,
    helpers,
    classes,
    pairs,
    inherited=None,
    dead=(),
):
    """What one top-level statement adds to a file's summary table (``out``)
    and to its classes' attributes (``attrs``).  ``inherited``: for a class,
    what its bases of this file hold on ``self`` (a subclass that runs its
    own ``forward`` with the ``self.attn`` its base builds); ``dead``: the
    functions whose summaries no table keeps (``live_defs``)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        calls = direct and (may_call is None or _spans(may_call, node))
        if node.name not in dead:
            _add(out, node.name, node, False, sdpa_names, calls, helpers=helpers, pairs=pairs)
            inner = factories.returned_function(node)
            if inner is not None:
                more = dict(factory=node, helpers=helpers, pairs=pairs)
                _add(out, node.name + "()", inner, False, sdpa_names, calls, **more)
        made = classes[4].get(id(node))  # ``factories.returned_modules``
        if made is not None and made[:1].isupper():
            out.setdefault(MODULES, {})[node.name] = made
        item = held_lists.returned_item(node) if made is None else None
        if item is not None and item[:1].isupper():  # ``return nn.ModuleList(Layer() ...)``
            out.setdefault(MODULES, {})[node.name] = item + held_lists.ITEMS
        torch_made = forms.torch_class(made, torch_names) if made and holds_modules else None
        if holds_modules and torch_made is None and item is not None:  # of torch's modules
            torch_made = forms.torch_class(item, torch_names)
            torch_made = torch_made + held_lists.ITEMS if torch_made is not None else None
        if torch_made is not None and not node.decorator_list:
            # ``def make(d, h): return nn.MultiheadAttention(d, h)``
            out.setdefault(TORCH_MODULES, {})[node.name] = torch_made
            flag = factories.returned_batch_first(node)
            if flag is not None:  # what a caller's data must be (MHA010 at its call)
                out.setdefault(TORCH_BATCH_FIRST, {})[node.name] = flag
    elif named_lambda(node):  # ``attend = lambda q, k, v, m: sdpa(...)``
        func = factories.as_function(node)
        calls = direct and (may_call is None or _spans(may_call, func))
        _add(out, func.name, func, False, sdpa_names, calls, helpers=helpers, pairs=pairs)
    elif isinstance(node, ast.ClassDef):
        wrappers, passed, kinds_of, made, _, uncalled = classes
        given, setters = passed.get(node.name, frozenset()), uncalled.get(node.name, ())
        written = chains.class_attrs(node, wrappers, given, kinds_of, setters)
        own = {**(inherited or {}), **written}
        kinds = handed_forms.with_handed(node, own, setters)  # and what the constructor is handed
        if kinds:
            attrs[node.name] = kinds
        torch_sub = forms.torch_subclass(node, torch_names) if holds_modules else None
        if torch_sub is not None:  # ``class EncoderLayer(nn.TransformerEncoderLayer)``
            out.setdefault(TORCH_MODULES, {})[node.name] = torch_sub
            if not any(getattr(item, "name", None) == "__init__" for item in node.body):
                out.setdefault(TORCH_BUILT, {})[node.name] = torch_sub
            else:  # ``super().__init__(..., batch_first=False)``: what callers must feed
                flag = factories.init_batch_first(node)
                if flag is not None:
                    out.setdefault(TORCH_BATCH_FIRST, {})[node.name] = flag
        elif holds_modules:
            torch_layer = forms.torch_layer(node, torch_names)
            if torch_layer is not None:  # ``def forward(self, src, ...)`` of its own
                out.setdefault(TORCH_LAYERS, {})[node.name] = torch_layer
        held = forms.torch_modules(own, {**torch_names, **made}) if holds_modules and own else {}
        if holds_modules:  # ``for layer in self.layers: layer(x, src_key_padding_mask=m)``
            # also of the file's functions that return one (probe AD's AD22)
            lists = held_lists.torch_lists(node, {**torch_names, **made} if made else torch_names)
            held = {**held, **{a + held_lists.ITEMS: n for a, n in lists.items()}}
        if "Transformer" in held.values():
            custom = forms.custom_parts(node)
            held = {a: n for a, n in held.items() if n != "Transformer" or a not in custom}
        # ``super().forward(x, x, x, key_padding_mask=pad)`` in a forward of its own
        # (a subclass that only hands torch's parameters on is torch's: ``torch_sub``)
        base = forms.torch_base(node, torch_names) if holds_modules and not torch_sub else None
        if base is not None:
            held = {**held, forms.SUPER: base}
        bases = forms.inherits_forward(node, written)
        if bases:
            out.setdefault(BASES, {})[node.name] = bases
        kv = pairs.in_class(node) if direct or helpers is not None else pairs
        kept = partial_attrs.partial_attrs(node)  # ``self.attend = partial(attend, ...)``
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inlined = partial_attrs.unfold(item, kept)
                # a lambda written out may bring its SDPA call into the method
                calls = direct and (
                    may_call is None or _spans(may_call, item) or inlined is not item
                )
                item = inlined
                key = f"{node.name}.{item.name}"
                deco = {dotted_name(d) for d in item.decorator_list}
                bound = "staticmethod" not in deco  # a static method binds no first parameter
                _add(
                    out,
                    key,
                    item,
                    bound,
                    sdpa_names,
                    calls,
                    kinds,
                    node.name,
                    held=held,
                    helpers=helpers,
                    pairs=kv,
                )
                made = factories.returned_module(item, dotted=True) if holds_modules else None
                torch_made = forms.torch_class(made, torch_names) if made else None
                if torch_made is not None and not deco:  # a mixin's ``_make_attention`` (probe AC)
                    out.setdefault(TORCH_MODULES, {})[key] = torch_made
                    flag = factories.returned_batch_first(item)
                    if flag is not None and not isinstance(flag, list):
                        out.setdefault(TORCH_BATCH_FIRST, {})[key] = flag
                got = out.get(key)
                if got and deco & {"staticmethod", "classmethod"}:
                    got["unbound"] = True  # ``Attend.sdpa(q, k, v, ...)``: called through the class
                if got and any(e["callee"][0] == "super" for e in got.get("edges", ())):
                    # where super() looks: the bases as written
                    got["bases"] = [b for b in map(dotted_name, node.bases) if b is not None]
        method = lambda f: _function_summary(
            f, True, sdpa_names, direct, kinds, None, held, helpers, kv
        )  # noqa: E731
        built = constructors.summary(node, out.get(f"{node.name}.__init__"), method)
        if built is not None:  # CLIP's block built with the mask it keeps: a call of the class
            out[node.name] = built


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# (a definition's text, what the file's imports make of it) -> what it adds to
# the summary table, its lines counted from its first; per process, bounded
_FRAGMENTS: Dict[bytes, tuple] = {}
MAX_FRAGMENTS = 20_000


def _inherited(node, attrs) -> Dict[str, str]:
    """What the bases of a class of this file, summarised before it, hold on
    ``self`` (``attrs``); empty for anything else."""
    out: Dict[str, str] = {}
    if isinstance(node, ast.ClassDef):
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in attrs:
                out.update(attrs[base.id])
    return out


def _reused(node, lines, context: str, out, attrs, facts) -> None:
    """``_summarise_node`` for a definition, or what it gave for the same text
    in the same file context, moved to the definition's lines."""
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
    text = "".join(lines[first - 1 : node.end_lineno or node.lineno])
    inherited = _inherited(node, attrs)  # a class's bases' attributes: part of its key
    context += repr(sorted(inherited.items())) if inherited else ""
    key = hashlib.sha1((context + text).encode("utf-8", "surrogatepass")).digest()
    kept = _FRAGMENTS.get(key)
    if kept is None:
        got_out: Dict[str, dict] = {}
        got_attrs: Dict[str, Dict[str, str]] = {}
        _summarise_node(node, got_out, got_attrs, *facts, inherited=inherited)
        kept = _moved((got_out, got_attrs), -first)
        if len(_FRAGMENTS) >= MAX_FRAGMENTS:
            _FRAGMENTS.clear()
        _FRAGMENTS[key] = kept
    got_out, got_attrs = _moved(kept, first)
    for name, value in got_out.items():
        if name in (MODULES, TORCH_MODULES, TORCH_BUILT, TORCH_LAYERS, TORCH_BATCH_FIRST, BASES):
            out.setdefault(name, {}).update(value)
        else:
            out[name] = value
    attrs.update(got_attrs)


_LINES = ("line", "fill_line", fills.SINK_LINE)


def _moved(value, delta: int):
    """A copy of a summary fragment with every ``"line"`` moved by ``delta``."""
    if isinstance(value, dict):
        return {
            k: (v + delta if k in _LINES and type(v) is int else _moved(v, delta))
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return type(value)(_moved(v, delta) for v in value)
    return value


def _reexports(tree: ast.Module) -> Dict[str, list]:
    """Names a package's ``__init__`` binds by relative import, at its top
    level (also inside a top-level ``if``/``try``)."""
    return {name: got for name, got in chains.imports(tree).items() if got[0]}


def _add(out, name, func, method, sdpa_names, calls=True, attrs=None, cls=None, **more) -> None:
    """``more``: ``factory``, ``held`` and ``helpers``, as ``_function_summary`` reads them."""
    got = _function_summary(func, method, sdpa_names, calls, attrs or {}, **more)
    if got is not None and cls is not None:
        got["cls"] = cls
    if got is not None:
        got["name"] = name
        out[name] = got


def _function_summary(
    func,
    method: bool,
    sdpa_names,
    direct=True,
    attrs=None,
    factory=None,
    held=None,
    helpers=None,
    pairs=None,
) -> Optional[dict]:
    """What one function's parameters reach: ``reach`` through its own SDPA
    calls (``direct``: the function's text may hold one), ``edges`` through
    its calls of other functions and modules (``chains.py``), with what the
    composition of both at use needs to settle them (``settle``).

    ``factory``: the function that returns ``func`` (``def make(p): def
    run(q, k, v): ... dropout_p=p ...; return run``).  Its parameters that
    ``func`` reads as they are (neither ``func`` nor the factory rebinds
    them) reach the sinks too; they are listed under ``closure`` with the
    factory's signature, and only the factory's call binds them
    (``binding.bind_factory``): a call of the product cannot pass them.

    ``held``: ``self.<attr>`` -> the torch attention module it holds (a
    method's class); a parameter that reaches such a module's mask argument
    (``self.mha(x, x, x, key_padding_mask=pad)``) reaches the sink
    ``"MultiheadAttention.key_padding_mask"``.

    ``helpers``: the file's own functions and the sign of what each returns
    (``fills.helper_signs``), None when the file fills no scores; a
    parameter that reaches the mask of a fill with a big negative reaches
    the sink ``fills.MASKED_FILL`` or ``fills.WHERE_KEEP``.  ``pairs``: the
    file's helpers that mask what they return (``fills.kv_helpers``)."""
    args = func.args
    # *args/**kwargs parameters take what the named ones do not: only named
    # parameters are followed (an SDPA call given **kwargs is not described)
    positional = [a.arg for a in args.posonlyargs + args.args]
    if method:
        if not positional:
            return None
        positional = positional[1:]
    kwonly = [a.arg for a in args.kwonlyargs]
    params = set(positional) | set(kwonly)
    if not params:
        return None
    defaults = signatures.literal_defaults(args)
    closure = forms.closure_params(factory, func, params) if factory is not None else set()
    # one walk of the function's own nodes gathers all a summary reads
    calls: List[ast.Call] = []  # SDPA's
    others: List[ast.Call] = []  # every other call: the edges' candidates
    loops: List[ast.For] = []
    stores: Dict[str, List[ast.AST]] = {}
    tests: List[ast.AST] = []
    training = False
    for n in astwalk.own_nodes(func):
        t = type(n)
        if t is ast.Call:
            if direct and is_sdpa(n, sdpa_names):
                calls.append(n)
            else:
                others.append(n)
        elif t is ast.Attribute:
            if n.attr == "training":
                training = True
        elif t in _STORING:
            for x in astwalk.walk(n):
                if type(x) is ast.Name and type(x.ctx) is ast.Store:
                    stores.setdefault(x.id, []).append(n)
            if t is ast.For:
                loops.append(n)
        elif t is ast.NamedExpr:
            stores.setdefault(n.target.id, []).append(n)
        elif t in _TESTING:
            tests.append(n.test)
    reads = params | (closure - set(stores))  # a closure name the product rebinds is its own
    stores = steps.rebinds(func, params, stores)
    edges = []
    fwd = _handed_on(func, args.kwarg.arg, stores) if args.kwarg is not None else None
    parents: Dict[int, ast.AST] = {}  # each node's parent, walked once when asked
    if others:
        read = lambda e, at: steps.reach(e, reads, at, 0)  # noqa: E731
        uses = returned_scores.result_uses(func, others, stores)
        reader = order.reader(func, params, stores, read, parents)
        edges = call_edges(others, loops, attrs or {}, reader, fwd, uses)
    positional_self = method and forms.positional_self(func)
    modules = forms.module_calls(others, held, positional_self, loops) if held else []
    filled, helped, soft = fills.score_sinks(func, others, stores, helpers)  # ``helped``: ``via``
    if helpers is not None and not soft:  # scores it masks and returns: its caller softmaxes
        filled = filled + returned_scores.returned_terms(func, stores)
    handwritten = None  # its own K/V multiplied by a mask
    if not filled and soft:
        if not calls:
            top = fills.straight_statements(func, params)
            handwritten = kv_scores.handwritten_kv(
                func, others, reads, stores, top, *_readers(pairs)
            )
    if not calls and not edges and not modules and not filled and handwritten is None:
        return None
    reached: Dict[str, dict] = {}
    # where a parameter is stored again, which stores may run before each sink
    if calls and params & set(stores):
        order.parents_in(func, parents)
    line = None
    own_mask = False  # some SDPA call masks its scores with what no parameter gives
    mask_line = None
    for i, call in enumerate(calls):
        here = {}
        given, splat = forms.sdpa_arguments(call)
        for name in forms.kwargs_given(splat, fwd, given):
            # the caller's keyword of that name, put in the **kwargs handed on to SDPA
            here[name] = {"param": name, "ops": [], "fwd": True}
        spread = forms.dict_splat(splat, func) if splat is not None else None
        if spread is not None:  # ``kwargs = {"dropout_p": dropout_p, ...}``, ``**kwargs``
            given = {**spread, **given}
            splat = None
        at_call = order.reaching(stores, call, parents) if parents else stores
        for name, expr in given.items():
            if name in SINK_ARGS:
                got = steps.reach(expr, reads, at_call, 0)
                if got is None and name == "attn_mask":  # HF T5's ``position_bias``
                    got = steps.defaulted_fold(func, expr, reads, at_call)
                if got is not None:
                    here[name] = got
                elif name in ("attn_mask", "is_causal") and not steps.none_or_false(expr):
                    own_mask = True
        # the parameters that give SDPA's mask or causal flag, when nothing else does
        unless = [
            here[name]["param"]
            for name in ("attn_mask", "is_causal")
            if name in given
            and not steps.none_or_false(given[name])
            and name in here
            and not here[name]["ops"]
        ]
        if (
            len(calls) == 1
            and not splat
            and not any(
                name in given and not steps.none_or_false(given[name])
                for name in ("attn_mask", "is_causal")
                if not (name in here and here[name]["param"] in unless)
            )
        ):  # keys or values multiplied by a parameter's mask, no scores masked (MHA015):
            # when a parameter may mask them, only on the calls that leave it None
            top = fills.straight_statements(func, params)
            kv = fills.kv_reach(given, reads, stores, top, *_readers(pairs), func=func)
            if kv is not None:
                if unless:
                    kv["unless"] = unless
                here[fills.KV] = kv
        if "attn_mask" in here and mask_line is None:
            mask_line = call.lineno  # the call a parameter's mask reaches is the one named
        if i == 0:
            reached, line = here, call.lineno
        else:  # several SDPA calls: keep what every one of them agrees on,
            # and a mask that one branch's call passes and the other's leaves
            # out (Informer's ``is_causal=True`` without a mask, else the mask)
            kept = {k: v for k, v in reached.items() if here.get(k) == v}
            if ("attn_mask" in reached) != ("attn_mask" in here):
                kept["attn_mask"] = reached.get("attn_mask") or here["attn_mask"]
            reached = kept
    if mask_line is not None and "attn_mask" in reached:
        line = mask_line
    module_reach: Dict[str, dict] = {}
    disagree: set = set()  # a module argument two calls fill from different parameters
    module_own: set = set()  # module arguments given by what no parameter carries
    for call, spec in modules:
        here = {}
        given = forms.module_arguments(call, spec, fwd)
        if given is None:  # a splat: any argument may be given
            given = {}
            module_own.update(f"{spec.name}.{a}" for a in spec.mask_args)
        for name, expr in forms.context_arguments(call, spec, given).items():
            got = steps.reach(expr, reads, stores, 0)  # cross-attention's context (MHA015)
            if got is not None and (name == "key" or f"{spec.name}.key" in here):
                here[f"{spec.name}.{name}"] = got
        for name, expr in given.items():
            if expr is forms.FORWARDED:  # the caller's keyword, in the **kwargs handed on
                here[f"{spec.name}.{name}"] = {"param": name, "ops": [], "fwd": True}
                continue
            got = steps.reach(expr, reads, stores, 0)
            if got is not None:
                here[f"{spec.name}.{name}"] = got
            elif not steps.none_or_false(expr):
                module_own.add(f"{spec.name}.{name}")
                if isinstance(expr, ast.Constant) and expr.value is True:  # ``tgt_is_causal=True``
                    module_own.add(f"{spec.name}.{name}{TRUE_HINT}")
        if here and not module_reach:
            line = line if line is not None else call.lineno
        # several module calls (a decoder layer's self- and cross-attention):
        # what each call's parameters reach, unless two calls disagree
        for k, v in here.items():
            if module_reach.setdefault(k, v) == v:
                continue
            # fairseq's decoder layer: ``key_padding_mask=self_attn_padding_mask``
            # on one module, ``=encoder_padding_mask`` on the other: a second
            # variant of the argument, judged as a call of its own
            alt = f"{k}{VARIANT}2"
            if module_reach.setdefault(alt, v) != v:
                disagree.update((k, alt))
    line = modules[0][0].lineno if line is None and modules else line
    reached.update({k: v for k, v in module_reach.items() if k not in disagree})
    reached.update(fills.fill_reach(filled, soft, reads, stores))
    if helped and fills.ADDED in reached:
        reached[fills.ADDED]["via"] = helped[3]
    if handwritten is not None:
        reached[fills.KV] = handwritten[0]
        line = line if line is not None else handwritten[1]
    _mark_apart(reached, tests)
    if filled and (line is None or all(k in fills.FILL_SINKS for k in reached)):
        line = filled[0][2]  # what is reached is reached at the fill
    out = {
        "line": line,
        "positional": positional,
        "kwonly": kwonly,
        "defaults": {k: v for k, v in defaults.items() if k in params},
        "reach": reached,
        "varargs": args.vararg is not None,
        "varkw": args.kwarg is not None,
        "rebound": sorted(params & set(stores)),
        "related": _related_pairs(tests, params),
        "training": training,
    }
    if own_mask:
        out["own_mask"] = True
    if filled and line != filled[0][2] and any(k in fills.FILL_SINKS for k in reached):
        out["fill_line"] = filled[0][2]  # the fill beside another sink is made here
    if module_own:  # the held module's call gives these itself (its own mask, a literal)
        out["module_own"] = sorted(module_own)
    if edges:
        out["edges"] = edges
    used = sorted(reads - params)
    if used:
        fargs = factory.args
        out["closure"] = {
            "params": used,
            "positional": [a.arg for a in fargs.posonlyargs + fargs.args],
            "kwonly": [a.arg for a in fargs.kwonlyargs],
            "defaults": signatures.literal_defaults(fargs),
        }
    settle(out["reach"], out)
    if not out["reach"] and not edges:
        return None
    return out


def _mark_apart(reached: Dict[str, dict], tests: List[ast.AST]) -> None:
    """Mark (``fills.APART``), in place, a fill whose mask parameter reaches
    an SDPA or module argument too, when no test of the function reads that
    parameter but to ask whether it is None: the two are on paths a flag
    picks (litgpt's soft-capping), not a choice by the mask's own kind."""
    others = {h["param"] for k, h in reached.items() if k not in fills.FILL_SINKS}
    for sink, how in reached.items():
        p = how["param"]
        if sink in fills.FILL_SINKS and sink != fills.KV and p in others:
            if not any(steps.reads_beyond_none(t, p) for t in tests):
                how["ops"] = [list(fills.APART)] + how["ops"]


_STORING = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With)
_TESTING = (ast.If, ast.While, ast.IfExp, ast.Assert)


def settle(reached: Dict[str, dict], summary: dict) -> None:
    """Drop, in place, what a function decides itself: ``is_causal`` when a
    guard or a fold-and-clear relates it to the mask (its flag parameter
    rebound, or tested together with the mask parameter), ``dropout_p`` when
    the function reads ``.training``."""
    mask = reached.get("attn_mask", {}).get("param")
    flag = reached.get("is_causal", {}).get("param")
    rebound = summary.get("rebound", ())
    if flag is not None and (
        flag in rebound
        or (mask is not None and (mask in rebound or [mask, flag] in summary.get("related", ())))
    ):
        reached.pop("is_causal")  # a guard or fold-and-clear relates the pair: the wrapper's
    if summary.get("training"):
        reached.pop("dropout_p", None)  # dropout gated on self.training inside


_CHANGES_DICT = frozenset(("pop", "popitem", "update", "setdefault", "clear"))


def _handed_on(func, name: str, stores: Dict[str, List[ast.AST]]) -> Optional[str]:
    """``name`` (the function's ``**kwargs``) when the function hands it on
    as it came: never rebound, never changed in place (``kwargs.pop(...)``,
    ``kwargs["k"] = v``, ``del kwargs["k"]``)."""
    if name in stores:
        return None
    for n in astwalk.own_nodes(func):
        if (
            isinstance(n, ast.Attribute)
            and n.attr in _CHANGES_DICT
            and isinstance(n.value, ast.Name)
            and n.value.id == name
        ) or (
            isinstance(n, ast.Subscript)
            and not isinstance(n.ctx, ast.Load)
            and isinstance(n.value, ast.Name)
            and n.value.id == name
        ):
            return None
    return name


def _readers(kv) -> tuple:
    """``pairs`` and ``movers`` of ``kv_scores.Readers`` (nothing without one)."""
    return (kv.pairs, kv.movers) if kv is not None else (None, frozenset())


def _related_pairs(tests: List[ast.AST], params: set) -> List[list]:
    """Every ordered pair of parameters one test reads together (an
    ``assert``, an ``if``)."""
    out = set()
    for t in tests:
        names = sorted({n.id for n in astwalk.walk(t) if isinstance(n, ast.Name)} & params)
        out.update((a, b) for a in names for b in names if a != b)
    return [list(p) for p in sorted(out)]
