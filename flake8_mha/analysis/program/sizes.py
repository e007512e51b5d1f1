"""The sizes a function or class hands a torch attention module it builds.

``def build_attention(dim, heads): return nn.MultiheadAttention(dim, heads)``
and ``class Block: def __init__(self, dim, heads): self.attn =
nn.MultiheadAttention(dim, heads)`` build a module whose width and head count
are their parameters.  The construction cannot say whether they divide; each
call (``build_attention(AUDIO_DIM, AUDIO_HEADS)``, ``Block(100, 8)``) can, and
a correct sibling call must not hide a wrong one.  The summary of a file
(``summaries.SIZES``) lists, per such function or class, which parameter (or
known number) reaches each size of each module it builds; MHA008 evaluates
the call's arguments for them at each call (``rules/mha008``).
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional

from ...core.torch_api import module_spec
from .chains import constructor, dotted_name
from .steps import given_test
from .forms import torch_class


def sizes_table(
    tree: ast.Module, torch_names: Dict[str, str], constants: Dict[str, object]
) -> Dict[str, List[dict]]:
    """``{name: [entry, ...]}`` for the file's top-level functions and classes
    (their ``__init__``) that build a torch attention module whose width or
    head count is one of their parameters, passed as it is.  An entry:
    ``{"module", "line", "embed", "heads", "embed_name", "heads_name",
    "params", "kwonly", "defaults"}``; ``embed``/``heads`` are ``["param",
    name]`` or ``["value", number]``; ``params`` the positional parameters a
    call fills (``self`` left out), ``defaults`` the literal numbers a
    parameter defaults to; ``constants``: the file's module-level numbers."""
    out: Dict[str, List[dict]] = {}
    funcs: Dict[str, tuple] = {}  # name -> (function, skip): what may hand sizes on
    for node in tree.body:
        func, skip = node, 0
        if isinstance(node, ast.ClassDef):
            func = next(
                (m for m in node.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"),
                None,
            )
            skip = 1
            for m in node.body:  # ``@classmethod def from_dims(cls, d, h): return cls(d, h)``
                if isinstance(m, ast.FunctionDef) and _decorated(m) == "classmethod":
                    funcs[f"{node.name}.{m.name}"] = (m, 1, node.name)
        if not isinstance(func, ast.FunctionDef) or func.decorator_list:
            continue
        funcs[node.name] = (func, skip, None)
        entries = _entries(func, skip, torch_names, constants)
        if isinstance(node, ast.ClassDef):
            for entry in entries:  # kept on ``self`` and only ever given another key
                if entry["module"] == "MultiheadAttention" and not entry["fastpath_off"]:
                    entry["fastpath_off"] = _cross_only(node, entry["line"])
        if entries:
            out[node.name] = entries
    for _ in range(MAX_NESTING):  # a function or class that hands its sizes on
        if not _compose(funcs, out, constants):
            break
    return out


def size_calls(
    tree: ast.Module, constants: Dict[str, object], imported: Dict[str, list]
) -> Dict[str, List[dict]]:
    """``{name: [handoff, ...]}`` for the file's top-level functions and
    classes (their ``__init__``, their class methods) that, every run, call
    or build a name the file imports (``imported``: ``chains.imports``; not
    of torch or another library known to build none of the project's), with
    one of their parameters as an argument, passed as it is
    (``MultiheadAttentionBlock(d_token, n_heads, ...)``, the class imported):
    if that callee builds a torch module with sizes its parameters give,
    this function hands it sizes too (``ProjectFiles.sizes`` composes the
    two across files).  A handoff: ``{"callee": the name as written,
    "args": [ref or None, ...], "keywords": {name: ref}, "params",
    "kwonly", "defaults", "init"}``, refs as in ``sizes_table``."""
    out: Dict[str, List[dict]] = {}
    if not any(lv or d.split(".")[0] not in _LIBRARIES for lv, d in imported.values()):
        return out  # nothing of the project imported: nothing to hand sizes to
    for node in tree.body:
        found = []
        if isinstance(node, ast.FunctionDef) and not node.decorator_list:
            found.append((node.name, node, 0, False))
        elif isinstance(node, ast.ClassDef):
            for m in node.body:
                if not isinstance(m, ast.FunctionDef):
                    continue
                if m.name == "__init__" and not m.decorator_list:
                    found.append((node.name, m, 1, True))
                elif _decorated(m) == "classmethod":
                    found.append((f"{node.name}.{m.name}", m, 1, False))
        for name, func, skip, init in found:
            a = func.args
            positional = [p.arg for p in (*a.posonlyargs, *a.args)][skip:]
            kwonly = [p.arg for p in a.kwonlyargs]
            names = set(positional) | set(kwonly)
            rebound = None  # read once a call hands a name on: most functions call none
            for call in _unconditional_calls(func):
                callee = dotted_name(call.func)
                where = imported.get(callee.split(".")[0]) if callee is not None else None
                if where is None or (not where[0] and where[1].split(".")[0] in _LIBRARIES):
                    continue
                if any(isinstance(x, ast.Starred) for x in call.args) or any(
                    k.arg is None for k in call.keywords
                ):
                    continue
                if rebound is None:
                    rebound = _rebound(func)
                args = [_ref(x, None, names, rebound, constants) for x in call.args]
                keywords = {
                    k.arg: _ref(k.value, None, names, rebound, constants) for k in call.keywords
                }
                refs = [r for r in [*args, *keywords.values()] if r is not None]
                if not any(r[0] == "param" for r in refs):
                    continue
                out.setdefault(name, []).append(
                    {
                        "callee": callee,
                        "args": args,
                        "keywords": keywords,
                        "params": positional,
                        "kwonly": kwonly,
                        "defaults": _defaults(func, constants),
                        "init": init,
                    }
                )
    return out


# what a project's class or function is never imported from
_LIBRARIES = frozenset(
    {
        *("torch", "numpy", "np", "math", "einops", "functools", "typing", "collections"),
        *("copy", "timm", "os", "sys", "re", "json", "itertools", "dataclasses", "logging"),
        *("warnings", "abc", "enum", "pathlib", "transformers", "tqdm", "scipy", "inspect"),
    }
)


def handed_through(handoff: dict, entry: dict) -> Optional[dict]:
    """The callee's sizes ``entry`` as the function that makes the
    ``handoff`` hands it: each size a parameter of that function, or a
    number; None when a size is unknown there or none is its parameter."""
    refs = []
    for ref in (entry["embed"], entry["heads"]):
        if ref[0] == "value":
            refs.append(ref)
            continue
        p = ref[1]
        got = _handoff_arg(handoff, entry, p)
        if got is None and not _passes(handoff, entry, p):
            default = entry["defaults"].get(p)
            got = ["value", default] if _is_int(default) else None
        if got is None:
            return None
        refs.append(got)
    if not any(r[0] == "param" for r in refs):
        return None
    guard = entry.get("when")
    if guard is not None:
        ref = _handoff_arg(handoff, entry, guard[1])
        guard = _guard_handed(guard, None, lambda _: ref)
        if guard is False:
            return None
    return dict(
        {k: v for k, v in entry.items() if k != "when"},
        **({"when": guard} if guard is not None else {}),
        embed=refs[0],
        heads=refs[1],
        params=handoff["params"],
        kwonly=handoff["kwonly"],
        defaults=handoff["defaults"],
        init=handoff["init"],
    )


def _passes(handoff: dict, entry: dict, p: str) -> bool:
    """Whether the handoff gives the callee's parameter ``p`` an argument."""
    index = entry["params"].index(p) if p in entry["params"] else -1
    return 0 <= index < len(handoff["args"]) or p in handoff["keywords"]


def _handoff_arg(handoff: dict, entry: dict, p: str) -> Optional[list]:
    """The ref the handoff gives the callee's parameter ``p`` (by position,
    else by keyword); None when it gives none, or one that is unknown."""
    index = entry["params"].index(p) if p in entry["params"] else -1
    if 0 <= index < len(handoff["args"]):
        return handoff["args"][index]
    return handoff["keywords"].get(p)


def valid_size_call(h) -> bool:
    """A handoff as ``size_calls`` writes it."""

    def ref(r) -> bool:
        return r is None or _valid_ref(r)

    return (
        isinstance(h, dict)
        and isinstance(h.get("callee"), str)
        and isinstance(h.get("args"), list)
        and all(map(ref, h["args"]))
        and isinstance(h.get("keywords"), dict)
        and all(isinstance(k, str) and ref(v) for k, v in h["keywords"].items())
        and _valid_names(h.get("params"))
        and _valid_names(h.get("kwonly"))
        and type(h.get("init")) is bool
        and isinstance(h.get("defaults"), dict)
        and all(isinstance(k, str) and type(v) is int for k, v in h["defaults"].items())
    )


MAX_NESTING = 4  # calls between the sizes' parameters and the module, in one file


def _decorated(func: ast.FunctionDef) -> Optional[str]:
    """The one decorator's plain name (``classmethod``), else None."""
    if len(func.decorator_list) != 1:
        return None
    d = func.decorator_list[0]
    return d.id if isinstance(d, ast.Name) else None


def _compose(funcs: Dict[str, tuple], out: Dict[str, List[dict]], constants) -> bool:
    """One round of composition: a function or class of the file that calls
    (or builds) another of the file with sizes entries, every run of it,
    handing its own parameters on (``Encoder(d, h)`` -> ``Layer(d, h)`` ->
    ``nn.MultiheadAttention(d, h)``; a class method's ``cls(d, h)``), gets
    those entries with its own parameters.  Whether anything was added."""
    added = False
    for name, (func, skip, cls) in funcs.items():
        a = func.args
        positional = [p.arg for p in (*a.posonlyargs, *a.args)][skip:]
        kwonly = [p.arg for p in a.kwonlyargs]
        names = set(positional) | set(kwonly)
        rebound = _rebound(func)
        have = {(e["module"], e["line"]) for e in out.get(name, ())}
        for call, when in _guarded_calls(func, names, rebound):
            if not isinstance(call.func, ast.Name):
                continue
            callee = cls if cls is not None and call.func.id == a.args[0].arg else call.func.id
            if callee == name or callee not in out:
                continue
            if any(isinstance(x, ast.Starred) for x in call.args) or any(
                k.arg is None for k in call.keywords
            ):
                continue
            for entry in out[callee]:
                if (entry["module"], entry["line"]) in have:
                    continue
                refs = [
                    _handed(call, entry, r, names, rebound, constants)
                    for r in (entry["embed"], entry["heads"])
                ]
                if None in refs or not any(r[0] == "param" for r in refs):
                    continue
                guard = _guard_handed(
                    entry.get("when"),
                    when,
                    lambda p: _handed(call, entry, ["param", p], names, rebound, constants),
                )
                if guard is False:
                    continue
                out.setdefault(name, []).append(
                    dict(
                        {k: v for k, v in entry.items() if k != "when"},
                        **({"when": guard} if guard is not None else {}),
                        embed=refs[0],
                        heads=refs[1],
                        params=positional,
                        kwonly=kwonly,
                        defaults=_defaults(func, constants),
                        init=skip == 1 and cls is None,
                    )
                )
                have.add((entry["module"], entry["line"]))
                added = True
    return added


def _handed(call: ast.Call, entry: dict, ref: list, params, rebound, constants):
    """A size of a callee's ``entry`` as the caller's ``call`` gives it: the
    caller's parameter passed as it is, or a number known there."""
    if ref[0] == "value":
        return ref
    p = ref[1]
    index = entry["params"].index(p) if p in entry["params"] else 10**6
    return _ref(_given(call, index, p), entry["defaults"].get(p), params, rebound, constants)


def _entries(func: ast.FunctionDef, skip: int, torch_names, constants) -> List[dict]:
    a = func.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)][skip:]
    kwonly = [p.arg for p in a.kwonlyargs]
    names = set(positional) | set(kwonly)
    rebound = _rebound(func)
    defaults = _defaults(func, constants)
    out = []
    for call, when in _guarded_calls(func, names, rebound):
        made = constructor(call)
        qn = torch_class(made, torch_names) if made is not None else None
        spec = module_spec(qn) if qn is not None else None
        if spec is None or spec.embed_param is None:
            continue
        if any(isinstance(x, ast.Starred) for x in call.args):
            continue
        sizes = [(0, spec.embed_param), (1, spec.heads_param)]
        if any(k.arg is None for k in call.keywords) and any(
            _given(call, i, name) is None for i, name in sizes
        ):
            continue  # a ``**kwargs`` splat may give a size; not one given by name or place
        refs = []
        for i, name in sizes:
            default = spec.init.default(name) if spec.init.has_default(name) else None
            refs.append(_ref(_given(call, i, name), default, names, rebound, constants))
        if None in refs or not any(r[0] == "param" for r in refs):
            continue
        out.append(
            {
                **({"when": when} if when is not None else {}),
                "module": spec.name,
                "line": call.lineno,
                "embed": refs[0],
                "heads": refs[1],
                "embed_name": spec.embed_param,
                "heads_name": spec.heads_param,
                "params": positional,
                "kwonly": kwonly,
                "defaults": defaults,
                "init": skip == 1,
                "fastpath_off": _fastpath_off(call, spec),
                "settings": _settings(call, spec),
            }
        )
    return out


# settings written at a construction that keep torch's fastpath off whatever
# the head count (MHA101 is moot there): literal keyword values
_OFF = {"batch_first": False, "bias": False, "add_bias_kv": True, "add_zero_attn": True}


_SETTINGS = ("batch_first", "bias", "add_bias_kv", "add_zero_attn")


def _settings(call: ast.Call, spec) -> Dict[str, Optional[bool]]:
    """The construction's fastpath settings, for a witness: a literal bool
    given by keyword, torch's default when left out, None otherwise."""
    given = {k.arg: k.value for k in call.keywords}
    out: Dict[str, Optional[bool]] = {}
    for name in _SETTINGS:
        if name not in spec.init.names:
            continue
        if name in given:
            v = given[name]
            out[name] = v.value if isinstance(v, ast.Constant) and type(v.value) is bool else None
        elif any(k.arg is None for k in call.keywords):
            out[name] = None  # a ``**kwargs`` splat may give it
        else:
            d = spec.init.default(name) if spec.init.has_default(name) else None
            out[name] = d if type(d) is bool else None
    return out


def _cross_only(cls: ast.ClassDef, line: int) -> bool:
    """The ``nn.MultiheadAttention`` built at ``line`` and kept on ``self``
    is called in the class, and every call's query is a name other than its
    key (probe AD's cross-attention block): torch's fastpath takes
    self-attention only, whatever the head count."""
    attrs = {
        t.attr
        for n in ast.walk(cls)
        if isinstance(n, ast.Assign) and getattr(n.value, "lineno", None) == line
        for t in n.targets
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
    }
    if len(attrs) != 1:
        return False
    (attr,) = attrs
    calls = [
        n
        for n in ast.walk(cls)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == attr
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == "self"
    ]
    return bool(calls) and all(
        len(c.args) >= 2
        and all(isinstance(a, ast.Name) for a in c.args[:2])
        and c.args[0].id != c.args[1].id
        for c in calls
    )


def _fastpath_off(call: ast.Call, spec) -> bool:
    names = spec.init.names
    for k in call.keywords:
        if k.arg in ("kdim", "vdim") and k.arg in names:
            return True
        if k.arg in _OFF and k.arg in names and isinstance(k.value, ast.Constant):
            if k.value.value is _OFF[k.arg]:
                return True
    return False


# what may skip the statements or expressions under it
_CONDITIONAL = (ast.If, ast.IfExp, ast.Try, ast.While, ast.BoolOp, ast.Match)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _unconditional_calls(func: ast.FunctionDef) -> List[ast.Call]:
    """The calls of the function's own body that every run of it makes: not
    under an ``if``, a conditional expression, a ``try``, a loop that may not
    run (``while``; a ``for`` over the layers builds each), or an ``and``/``or``
    (``nn.MultiheadAttention(dim, heads) if heads else nn.Identity()`` builds
    nothing with ``heads=0``)."""
    out: List[ast.Call] = []
    stack = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, _CONDITIONAL + _SCOPES):
            continue
        if isinstance(node, ast.Call):
            out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _guarded_calls(func: ast.FunctionDef, params: set, rebound: set) -> List[tuple]:
    """``(call, when)`` for the calls of the function's own body that every
    run makes (``when`` None), or that every run makes when a parameter is
    given: under ``if p is not None:`` or ``if p:`` with no ``else``, ``p`` a
    parameter the function does not assign (``when``: ``["given", p]`` or
    ``["truthy", p]``; MusicGen's cross-attention, built when
    ``cross_heads`` is given)."""
    out = [(c, None) for c in _unconditional_calls(func)]
    stack = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, ast.If):
            when = _guard(node.test, params, rebound)
            if when is not None and not node.orelse:
                holder = ast.Module(body=node.body, type_ignores=[])
                out.extend((c, when) for c in _unconditional_calls(holder))
            continue
        if isinstance(node, _CONDITIONAL):
            continue
        stack.extend(n for n in ast.iter_child_nodes(node) if isinstance(n, ast.stmt))
    return out


def _guard(test: ast.expr, params: set, rebound: set) -> Optional[list]:
    """``["given", p]`` for ``p is not None``, ``["truthy", p]`` for ``p``."""
    p = given_test(test)
    if p is None or p not in params or p in rebound:
        return None
    return ["truthy" if isinstance(test, ast.Name) else "given", p]


def _guard_handed(inner, outer, handed):
    """The guard of an entry handed on by a call under the guard ``outer``:
    None (every run), a guard on the handing function's parameter, or False
    (not known to run: dropped).  ``handed(p)``: the callee's parameter ``p``
    as the call gives it (a ref, or None when unknown)."""
    if inner is not None:
        ref = handed(inner[1])
        if ref is None:
            return False
        if ref[0] == "value":  # a number given: it runs (a ``0`` under ``if p:`` does not)
            if inner[0] == "truthy" and not ref[1]:
                return False
            inner = None
        else:
            inner = [inner[0], ref[1]]
    if inner is not None and outer is not None:
        return False  # two guards: not followed
    return inner if inner is not None else outer


def _given(call: ast.Call, index: int, name: str) -> Optional[ast.expr]:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return call.args[index] if index < len(call.args) else None


def _ref(node, default, params: set, rebound: set, constants) -> Optional[list]:
    """``["param", p]`` for a parameter passed as it is, ``["value", n]`` for a
    number known here (``default`` when not passed), None otherwise."""
    if node is None:
        return ["value", default] if _is_int(default) else None
    if isinstance(node, ast.Name) and node.id in params:
        return ["param", node.id] if node.id not in rebound else None
    if isinstance(node, ast.Constant) and _is_int(node.value):
        return ["value", node.value]
    if isinstance(node, ast.Name) and _is_int(constants.get(node.id)):
        return ["value", constants[node.id]]
    return None


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _rebound(func: ast.FunctionDef) -> set:
    """The names the function assigns anywhere in its own body."""
    out = set()
    for n in ast.walk(func):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
    return out


def _defaults(func: ast.FunctionDef, constants) -> Dict[str, int]:
    """Parameter -> the number it defaults to (a literal or a module constant)."""
    a = func.args
    positional = [*a.posonlyargs, *a.args]
    pairs = list(zip(positional[len(positional) - len(a.defaults) :], a.defaults))
    pairs += [(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
    out: Dict[str, int] = {}
    for p, d in pairs:
        if isinstance(d, ast.Constant) and _is_int(d.value):
            out[p.arg] = d.value
        elif isinstance(d, ast.Name) and _is_int(constants.get(d.id)):
            out[p.arg] = constants[d.id]
    return out


def _valid_ref(r) -> bool:
    """``["param", name]`` or ``["value", number]``."""
    return (
        isinstance(r, list)
        and len(r) == 2
        and (r[0], type(r[1])) in (("param", str), ("value", int))
    )


def _valid_names(x) -> bool:
    return isinstance(x, list) and all(isinstance(n, str) for n in x)


def valid_size_entry(e) -> bool:
    """An entry as ``sizes_table`` writes it."""
    return (
        isinstance(e, dict)
        and all(isinstance(e.get(k), str) for k in ("module", "embed_name", "heads_name"))
        and type(e.get("line")) is int
        and type(e.get("init")) is bool
        and type(e.get("fastpath_off", False)) is bool
        and isinstance(e.get("settings", {}), dict)
        and all(v in (True, False, None) for v in e.get("settings", {}).values())
        and _valid_ref(e.get("embed"))
        and _valid_ref(e.get("heads"))
        and _valid_guard(e.get("when"))
        and _valid_names(e.get("params"))
        and _valid_names(e.get("kwonly"))
        and isinstance(e.get("defaults"), dict)
        and all(isinstance(k, str) and type(v) is int for k, v in e["defaults"].items())
    )


def _valid_guard(when) -> bool:
    return when is None or (
        isinstance(when, list)
        and len(when) == 2
        and when[0] in ("given", "truthy")
        and isinstance(when[1], str)
    )
