"""Each instance of a class on its own (issue 26, item 5): does one of them
get both a flag and a mask?

``Attend(causal=True)`` kept on ``self.attend`` by a decoder that never
passes a mask, and ``Attend(causal=False)`` kept by an encoder that passes
one: every construction taken together makes ``is_causal`` maybe true, and
every call taken together passes a mask, yet no instance ever gets both.
``paired`` pairs each construction with the calls of the attribute it is
kept in, inside the class that keeps it.  It is read with Python's ``ast``
from the project files that name the class; nothing is imported or run.

What it cannot read leaves the answer unknown (None), never a guess: the
class named anywhere but in ``self.<attr> = Cls(...)`` inside a class, the
attribute read otherwise than called, a class that keeps one being
subclassed (its subclasses' methods may call it), a call with ``*args`` or
``**kwargs``.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, List, Optional, Tuple

from ...core import walk as astwalk
from ...core.atomic import read_regular
from . import callers, signatures
from .chains import CLONES, dotted_name, self_attr, transparent_wrappers, wrapped_module

MAX_BYTES = 2 * 1024 * 1024
UNKNOWN = callers.UNKNOWN
_OFF = (None, False, 0)
MAX_DEPTH = 3  # classes a flag and a mask handed down together are followed up


def paired(
    files: List[str],
    own_text: str,
    cls: str,
    flag: str,
    mask: str,
    depend,
    depth: int = 0,
) -> Optional[bool]:
    """Whether an instance of ``cls`` (a top-level class of ``files[0]``,
    whose text is ``own_text``) may be built with its ``__init__`` parameter
    ``flag`` on and called with its ``forward`` parameter ``mask`` given:
    True, False (no instance is: each is built with the flag off or never
    given a mask), or None (unknown, also when nothing in the project builds
    it).  An instance kept by a class that hands down its own constructor's
    flag and its own ``forward``'s mask (``SABlock(causal=causal)``, then
    ``self.attn(x, attn_mask=attn_mask)``) is that class's question, asked
    the same way up to ``MAX_DEPTH`` classes.  ``depend`` is told each file
    read."""
    init = signatures.init_signature(own_text, cls)
    forward = signatures.function_signature(own_text, f"{cls}.forward")
    if init is None or forward is None or flag not in init[0]:
        return None
    positional, kwonly, defaults, varargs, varkw = forward
    params = list(positional) + list(kwonly)
    if mask not in params or varargs or varkw:
        return None
    found, trees, kept_attrs, owners = 0, [], set(), set()
    for i, path in enumerate(files):
        text = own_text if i == 0 else _read(path)
        if text is None:
            return None
        if cls not in text:
            continue
        depend(path)
        try:
            tree = signatures.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        makers = _makers(tree, cls)
        kept = _kept(tree, cls, makers, transparent_wrappers(tree))
        if kept is None:
            return None
        for maker in makers:  # a factory another file may call too
            word = re.compile(r"\b" + re.escape(maker) + r"\b")
            if any(word.search(_read(other) or "") for other in files if other != path):
                return None
        trees.append((path, (text, tree)))
        for owner, attr, built, how in kept:
            found += 1
            kept_attrs.add(attr)
            owners.add(owner.name)
            given = _given(built, init[0], 0)
            if given is None:
                return None
            if flag in given and signatures.literal(given[flag]) in _OFF:
                continue
            if flag not in given and init[1].get(flag, UNKNOWN) in _OFF:
                continue  # built with the flag off: whatever it is given
            calls = _calls_of(owner, attr, how)
            if not calls:
                return None  # never called here: its callers are outside the project
            masked, given_at = [], []  # each mask given, and the call that gives it
            for call in calls:
                passed = _given(call, params, len(kwonly))
                if passed is None:
                    return None
                if mask in passed and signatures.literal(passed[mask]) is not None:
                    masked.append(passed[mask])
                    given_at.append(call)
                elif mask not in passed and defaults.get(mask, UNKNOWN) is not None:
                    masked.append(None)
                    given_at.append(call)
            if not masked:
                continue  # never given a mask: whatever its flag
            if _kept_apart(owner, given.get(flag), masked, given_at):
                continue  # the mask is None whenever the flag handed down is on
            up = _handed_down(owner, given.get(flag), masked, tree)
            if up is None or depth >= MAX_DEPTH:
                return True  # the flag maybe on, a mask maybe given: one instance may get both
            answer = paired(
                callers.project_files(path), text, owner.name, up[0], up[1], depend, depth + 1
            )
            if answer is not False:
                return answer
    if not found or _reached_from_outside(files, trees, kept_attrs, owners, depend):
        return None
    return False


def _reached_from_outside(files, trees, attrs, owners, depend) -> bool:
    """Whether the instances may be reached on anything but ``self``: in a
    file that names a class keeping one, any other use of the attribute
    (``blk.attend(q, k, v, keep)`` after ``blk = Block()``); in any file, a
    call of an attribute of that name given more than one argument.  Their
    calls there are not paired.  ``trees``: (path, (text, tree)) of the
    files already read."""
    parsed = dict(trees)
    for path in files:
        text, tree = parsed.get(path) or (_read(path), None)
        if text is None or not any(a in text for a in attrs):
            continue
        depend(path)  # a use added there later unsettles the answer
        try:
            tree = tree or signatures.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return True
        named = any(re.search(r"\b" + re.escape(o) + r"\b", text) for o in owners)
        if named and any(
            isinstance(n, ast.ClassDef)
            and any((dotted_name(b) or "").rsplit(".", 1)[-1] in owners for b in n.bases)
            for n in astwalk.walk(tree)
        ):
            return True  # a subclass of a keeping class: its methods may call the instance
        calls = {id(n.func): n for n in astwalk.walk(tree) if isinstance(n, ast.Call)}
        for node in astwalk.walk(tree):
            if not isinstance(node, ast.Attribute) or node.attr not in attrs:
                continue
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                continue
            call = calls.get(id(node))
            if named or (call is not None and len(call.args) + len(call.keywords) > 1):
                return True
    return False


def _handed_down(owner: ast.ClassDef, flag, masks, tree) -> Optional[Tuple[str, str]]:
    """(its ``__init__`` parameter, its ``forward`` parameter) when ``owner``,
    a top-level class, hands down both: the flag is a parameter of its
    ``__init__`` and every mask given is the one parameter of its
    ``forward``."""
    if owner not in tree.body or not isinstance(flag, ast.Name):
        return None
    names = {m.id for m in masks if isinstance(m, ast.Name)}
    if len(names) != 1 or len(masks) != sum(isinstance(m, ast.Name) for m in masks):
        return None
    methods = {m.name: m for m in owner.body if isinstance(m, ast.FunctionDef)}
    init, forward = methods.get("__init__"), methods.get("forward")
    if init is None or forward is None:
        return None
    mask = names.pop()
    if flag.id not in {a.arg for a in init.args.args + init.args.kwonlyargs}:
        return None
    if mask not in {a.arg for a in forward.args.args + forward.args.kwonlyargs}:
        return None
    inside = {id(n) for n in astwalk.walk(forward)}
    if not all(id(m) in inside for m in masks):
        return None
    if _rebinds(init, flag.id) or _rebinds(forward, mask):
        return None  # ``causal = not causal``: not the parameter handed down
    return flag.id, mask


def _kept_apart(owner: ast.ClassDef, flag, masks, calls) -> bool:
    """palm-rlhf's ``PaLM``: built with ``causal``, it keeps ``self.causal =
    causal``, hands ``causal=causal`` to each block, and in ``forward`` makes
    ``mask`` only ``if not self.causal:`` (``else: mask = None``), then
    ``layer(x, mask=mask)``.  True when the flag given is an ``__init__``
    parameter kept on ``self`` once, and every mask passed is a local name
    of the calling method bound only by one ``if`` on that attribute, to
    ``None`` on the side where it is on."""
    methods = {m.name: m for m in owner.body if isinstance(m, ast.FunctionDef)}
    init = methods.get("__init__")
    if init is None or not isinstance(flag, ast.Name) or _rebinds(init, flag.id):
        return False
    if flag.id not in {a.arg for a in init.args.args + init.args.kwonlyargs}:
        return False
    kept = [
        self_attr(n.targets[0])
        for n in astwalk.walk(owner)
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and self_attr(n.targets[0])
    ]
    attrs = [
        self_attr(n.targets[0])
        for n in astwalk.walk(init)
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(n.value, ast.Name)
        and n.value.id == flag.id
    ]
    if len(attrs) != 1 or attrs[0] is None or kept.count(attrs[0]) != 1:
        return False
    for mask, call in zip(masks, calls):
        method = next(
            (m for m in methods.values() if any(n is call for n in astwalk.walk(m))), None
        )
        if method is None or not isinstance(mask, ast.Name):
            return False
        if mask.id in {a.arg for a in method.args.args + method.args.kwonlyargs}:
            return False
        if not _none_when_on(method, mask.id, attrs[0], call):
            return False
    return True


def _none_when_on(method: ast.FunctionDef, name: str, attr: str, call: ast.Call) -> bool:
    """Whether ``name`` is bound in ``method`` only by one ``if self.<attr>:``
    (or ``if not self.<attr>:``) statement before ``call``, once on each
    side, to ``None`` on the side where the attribute is true."""
    stores = _stores(method, name)
    for stmt in astwalk.walk(method):
        if not isinstance(stmt, ast.If) or stmt.lineno > call.lineno:
            continue
        test, on_side = stmt.test, None
        if self_attr(test) == attr:
            on_side = stmt.body
        elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            if self_attr(test.operand) == attr:
                on_side = stmt.orelse
        if on_side is None:
            continue
        off_side = stmt.orelse if on_side is stmt.body else stmt.body
        on = [s for s in on_side if isinstance(s, ast.Assign) and _binds(s, name)]
        off = [s for s in off_side if isinstance(s, ast.Assign) and _binds(s, name)]
        if len(on) != 1 or len(off) != 1 or len(stores) != 2:
            return False
        value = on[0].value
        return isinstance(value, ast.Constant) and value.value is None
    return False


def _binds(stmt: ast.Assign, name: str) -> bool:
    return (
        len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and (stmt.targets[0].id == name)
    )


def _rebinds(func: ast.FunctionDef, name: str) -> bool:
    return bool(_stores(func, name))


def _stores(func: ast.FunctionDef, name: str) -> List[ast.Name]:
    """Every store (or ``del``) of ``name`` in ``func``."""
    return [
        n
        for n in astwalk.walk(func)
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del))
    ]


def _read(path: str) -> Optional[str]:
    try:
        return read_regular(path, MAX_BYTES).decode("utf-8", "replace")
    except OSError:
        return None


DIRECT, ITEMS, CHAIN = "direct", "items", "chain"  # how an attribute keeps an instance
_LISTS = {"ModuleList": ITEMS, "Sequential": CHAIN, **{name: ITEMS for name in CLONES}}


def _kept(
    tree: ast.Module, cls: str, makers: Dict[str, ast.Call], wrappers=None
) -> Optional[List[Tuple[ast.ClassDef, str, ast.Call, str]]]:
    """``(the class, the attribute, the construction, how)`` of each
    instance a method keeps on ``self``: ``self.<attr> = cls(...)``
    (``DIRECT``), or an item of an ``nn.ModuleList`` (``ITEMS``) or
    ``nn.Sequential`` (``CHAIN``) built there from a display, a
    comprehension or a local list of them, or appended to one (also
    through a local name: ``block = Residual(Block(...))``, then
    ``self.layers.append(block)``); inside one of the file's transparent
    ``wrappers`` (``chains.transparent_wrappers``), which hand their calls
    on whole; None when ``cls`` is named any other way, or a class that
    keeps one is subclassed."""
    out: List[Tuple[ast.ClassDef, str, ast.Call, str]] = []
    placed = set()
    # ``makers``: ``def causal_attention(): return Attention(causal=True)`` (``_makers``)
    for built in makers.values():
        placed.add(id(built.func))
    for owner in astwalk.walk(tree):
        if not isinstance(owner, ast.ClassDef):
            continue
        for method in owner.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            parents = {id(c): n for n in astwalk.walk(method) for c in astwalk.children(n)}
            for node in astwalk.walk(method):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    if node.func.id == cls:
                        keeper = _keeper(node, parents, method, wrappers)
                        if keeper is not None:
                            out.append((owner, keeper[0], node, keeper[1]))
                            placed.add(id(node.func))
                    elif node.func.id in makers and not node.args and not node.keywords:
                        keeper = _keeper(node, parents, method, wrappers)
                        if keeper is None:
                            return None  # the factory's product kept another way
                        out.append((owner, keeper[0], makers[node.func.id], keeper[1]))
                        placed.add(id(node.func))
    owners = {o.name for o, _, _, _ in out}
    made = {id(built) for _, _, built, _ in out}
    if any(id(built) not in made for built in makers.values()):
        return None  # a factory nothing here keeps: its callers are elsewhere
    for node in astwalk.walk(tree):
        if isinstance(node, ast.Name) and node.id in makers and id(node) not in placed:
            return None  # a factory called with arguments, or passed around
        if isinstance(node, ast.Name) and node.id == cls and id(node) not in placed:
            if not isinstance(node.ctx, ast.Store):
                return None  # passed around, subclassed, built elsewhere
        if isinstance(node, ast.ClassDef) and any(
            isinstance(b, ast.Name) and b.id in owners for b in node.bases
        ):
            return None
    return out


def _makers(tree: ast.Module, cls: str) -> Dict[str, ast.Call]:
    """The module-level functions without parameters whose whole body
    returns one construction of ``cls`` (``def causal_attention(): return
    Attention(causal=True)``): each call of one builds that instance."""
    out: Dict[str, ast.Call] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.decorator_list:
            continue
        a = node.args
        if a.posonlyargs or a.args or a.vararg or a.kwonlyargs or a.kwarg:
            continue
        body = [
            s
            for s in node.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        ]
        if len(body) == 1 and isinstance(body[0], ast.Return):
            value = body[0].value
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id == cls
            ):
                out[node.name] = value
    return out


def _keeper(call: ast.Call, parents, method, wrappers=None) -> Optional[Tuple[str, str]]:
    """(the attribute, how) that keeps what ``call`` builds."""
    how, node = DIRECT, call
    while True:
        up = parents.get(id(node))
        if isinstance(up, ast.Call) and node is not up.func and how == DIRECT:
            if wrapped_module(up, wrappers) is node:  # ``Residual(Block(...))``
                node = up
                continue
            appended = _appended_to(up, node)
            if appended is not None:  # ``self.layers.append(Block(...))``
                return appended, ITEMS
        if isinstance(up, (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp, ast.Starred)):
            how, node = ITEMS if how == DIRECT else how, up
            continue
        if isinstance(up, ast.comprehension):
            return None  # iterated over, not built
        if isinstance(up, ast.Call) and node is not up.func and _container(up) is not None:
            how, node = _container(up), up
            continue
        break
    if not isinstance(up, ast.Assign) or len(up.targets) != 1:
        return None
    target = up.targets[0]
    if self_attr(target) is not None:
        return (target.attr, how) if how != ITEMS or node is not call else None
    if isinstance(target, ast.Name) and how == DIRECT:
        # ``block = Residual(Block(...))``, then ``self.layers.append(block)``
        uses = [n for n in astwalk.walk(method) if isinstance(n, ast.Name) and n.id == target.id]
        for n in uses:
            up = parents.get(id(n))
            if isinstance(up, ast.Call) and len(uses) == 2:
                appended = _appended_to(up, n)
                if appended is not None:
                    return appended, ITEMS
        return None
    if not isinstance(target, ast.Name) or how != ITEMS or _container(node) is not None:
        return None
    for other in astwalk.walk(
        method
    ):  # ``blocks = [...]``, then ``self.x = nn.Sequential(*blocks)``
        if (
            isinstance(other, ast.Assign)
            and len(other.targets) == 1
            and isinstance(other.value, ast.Call)
        ):
            kind = _container(other.value)
            held = [a.value if isinstance(a, ast.Starred) else a for a in other.value.args]
            if kind and any(isinstance(a, ast.Name) and a.id == target.id for a in held):
                attr = self_attr(other.targets[0])
                return (attr, kind) if attr is not None else None
    return None


def _appended_to(call: ast.Call, arg: ast.AST) -> Optional[str]:
    """``self.<attr>`` when ``call`` is ``self.<attr>.append(arg)``."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "append" and call.args == [arg]:
        return self_attr(func.value)
    return None


def _container(call: ast.AST) -> Optional[str]:
    if not isinstance(call, ast.Call):
        return None
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return _LISTS.get(name)


def _calls_of(owner: ast.ClassDef, attr: str, how: str) -> Optional[List[ast.Call]]:
    """The calls of the instance ``self.<attr>`` keeps in ``owner``'s
    methods: ``self.<attr>(...)`` (or ``.forward(...)``); for items, a loop
    variable's calls (``for blk in self.<attr>``, over ``enumerate`` too)
    and ``self.<attr>[i](...)``; for a ``Sequential``, its calls, which hand
    a member their first argument alone.  None when ``self.<attr>`` is read
    any other way there (``len(...)`` aside)."""
    calls: List[ast.Call] = []
    seen = set()
    loops: Dict[str, ast.For] = {}
    for node in astwalk.walk(owner):
        if isinstance(node, ast.For):
            it, target = node.iter, node.target
            if isinstance(it, ast.Call) and getattr(it.func, "id", None) == "enumerate" and it.args:
                it = it.args[0]
                target = (
                    target.elts[1]
                    if isinstance(target, ast.Tuple) and len(target.elts) == 2
                    else None
                )
            elif isinstance(it, ast.Call) and _zipped(it) and isinstance(target, ast.Tuple):
                # ``for layer, extra in zip_longest(self.layers, extras)``
                at = [i for i, a in enumerate(it.args) if self_attr(a) == attr]
                if len(at) == 1 and len(target.elts) == len(it.args):
                    it, target = it.args[at[0]], target.elts[at[0]]
            if self_attr(it) == attr and how == ITEMS and isinstance(target, ast.Name):
                loops[target.id] = node
                seen.add(id(it))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "len" and node.args:
            seen.add(id(node.args[0]))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if self_attr(node.func.value) != attr:
                continue
            if node.func.attr in _MODULE_READS or (how == ITEMS and node.func.attr == "append"):
                seen.add(id(node.func.value))  # ``self.layers.modules()``: nothing is run
    for node in astwalk.walk(owner):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            func = func.value
        if how == ITEMS and isinstance(func, ast.Subscript) and self_attr(func.value) == attr:
            calls.append(node)
            seen.add(id(func.value))
        elif how == ITEMS and isinstance(func, ast.Name) and func.id in loops:
            if any(node is n for n in astwalk.walk(loops[func.id])):
                calls.append(node)
        elif self_attr(func) == attr:
            if how == ITEMS:
                return None  # a ModuleList called: it raises, the items are not what runs
            seen.add(id(func))
            if how == CHAIN:  # the members get the first argument alone
                node = ast.Call(func=func, args=node.args[:1], keywords=[])
            calls.append(node)
    for node in astwalk.walk(owner):
        if self_attr(node) == attr and isinstance(node.ctx, ast.Load) and id(node) not in seen:
            return None  # passed on, aliased, read for an attribute
    return calls


# what ``self.<attr>.<name>()`` may do without running a module's forward
_MODULE_READS = frozenset(
    (
        "modules",
        "named_modules",
        "children",
        "named_children",
        "parameters",
        "named_parameters",
        "buffers",
        "named_buffers",
        "train",
        "eval",
        "requires_grad_",
    )
)


def _zipped(call: ast.Call) -> bool:
    name = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
    return name in ("zip", "zip_longest", "izip_longest") and not call.keywords


def _given(call: ast.Call, params, kwonly: int) -> Optional[Dict[str, ast.AST]]:
    """What the call passes for each parameter it gives (left out: absent);
    None for a splat or a call that does not fit ``params`` (the last
    ``kwonly`` of them keyword-only)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return None
    positional = list(params)[: len(params) - kwonly]
    if len(call.args) > len(positional):
        return None
    out: Dict[str, ast.AST] = dict(zip(positional, call.args))
    for k in call.keywords:
        if k.arg not in params:
            return None
        out[k.arg] = k.value
    return out
