"""Lambdas the layout reads through: ``permute = lambda t: t.permute(1, 0, 2)``
then ``permute(q)``, and ``map`` of one over a literal tuple or list
(``qt, kt, vt = map(permute, [q, k, v])``: release review 40's carefree-learn
test, where the axis swap was the conversion to the module's layout)."""

from __future__ import annotations

from dataclasses import replace
from typing import Dict, Optional

import libcst as cst

from ..flow import Def, DefKind, lookup


def _one_param_lambda(func, env, scope) -> Optional[cst.Lambda]:
    """The lambda ``func`` is, or a name bound once to: one plain parameter."""
    lam = func
    if isinstance(func, cst.Name):
        defs = lookup(func.value, env, scope)
        if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN:
            return None
        lam = defs[0].node
    if not isinstance(lam, cst.Lambda):
        return None
    p = lam.params
    if (
        len(p.params) != 1
        or p.params[0].default is not None
        or p.posonly_params
        or p.kwonly_params
        or not isinstance(p.star_arg, cst.MaybeSentinel)
        or p.star_kwarg is not None
    ):
        return None
    return lam


def applied(call: cst.Call, env, scope, made: Dict[int, tuple]) -> Optional[cst.BaseExpression]:
    """The body of the one-parameter lambda ``call`` calls with one positional
    argument, its parameter replaced by that argument, when the parameter
    appears once in it (``t.permute(1, 0, 2)``, ``rearrange(t, "...")``);
    made once per call and kept in ``made`` (so that no other node shares
    its ``id``).  None for anything else."""
    if id(call) in made:
        return made[id(call)][1]
    lam = _one_param_lambda(call.func, env, scope)
    if lam is None or len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return None
    name = lam.params.params[0].name.value
    uses = [n for n in _names(lam.body) if n.value == name]
    if len(uses) != 1:
        return None
    body = lam.body.deep_replace(uses[0], call.args[0].value)
    made[id(call)] = (call, body)
    return body


def mapped(d: Def, made: Dict[tuple, tuple]) -> Optional[cst.Call]:
    """For an unpacking of the builtin ``map(f, (a, b, c))`` over a literal
    tuple or list: ``f(a)`` for the first target, ``f(b)`` for the second,
    made once per definition and kept in ``made``.  None otherwise."""
    call = d.node
    if isinstance(call, (cst.GeneratorExp, cst.ListComp)):
        return _comprehended(d, made)
    if (
        not isinstance(call, cst.Call)
        or not isinstance(call.func, cst.Name)
        or call.func.value != "map"
        or len(d.index) != 1
        or len(call.args) != 2
        or any(a.star or a.keyword is not None for a in call.args)
        or not isinstance(call.args[1].value, (cst.Tuple, cst.List))
        or lookup("map", d.env, d.scope)
    ):
        return None
    items = call.args[1].value.elements
    i = d.index[0]
    if i >= len(items) or any(isinstance(e, cst.StarredElement) for e in items):
        return None
    key = (id(call), i)
    if key not in made:
        made[key] = (call, cst.Call(call.args[0].value, [cst.Arg(items[i].value)]))
    return made[key][1]


def _comprehended(d: Def, made: Dict[tuple, tuple]) -> Optional[cst.BaseExpression]:
    """``qt, kt, vt = (t.permute(1, 0, 2) for t in (q, k, v))``: the element
    with the loop's name replaced by the item of the target's place."""
    comp = d.node
    loop = comp.for_in
    if (
        len(d.index) != 1
        or loop.inner_for_in is not None
        or loop.ifs
        or loop.asynchronous is not None
        or not isinstance(loop.target, cst.Name)
        or not isinstance(loop.iter, (cst.Tuple, cst.List))
    ):
        return None
    items = loop.iter.elements
    i = d.index[0]
    if i >= len(items) or any(isinstance(e, cst.StarredElement) for e in items):
        return None
    uses = [n for n in _names(comp.elt) if n.value == loop.target.value]
    if len(uses) != 1:
        return None
    key = (id(comp), i)
    if key not in made:
        made[key] = (comp, comp.elt.deep_replace(uses[0], items[i].value))
    return made[key][1]


def handed(call: cst.Call, env, scope, frame, made: Dict[int, tuple]):
    """``evolution_func()`` in a helper called as ``self.RK4_step(self.xi,
    self.evolution_of_xi)``: a call, with no arguments, of a parameter whose
    argument in the frame is a function or bound method by name; (the call
    of that argument, made once, and the caller's env, scope and frame), or
    None (release review 39's swarmalator, an ODE step around attention)."""
    func = call.func
    if call.args or not isinstance(func, cst.Name) or frame is None:
        return None
    defs = lookup(func.value, env, scope)
    if len(defs) != 1 or defs[0].kind != DefKind.PARAM or defs[0].extra is not frame.func:
        return None
    arg = frame.args.get(func.value)
    if not isinstance(arg, (cst.Name, cst.Attribute)):
        return None
    key = id(call)
    if key not in made or made[key][2] is not arg:
        made[key] = (call, cst.Call(arg, []), arg)
    return made[key][1], frame.env, frame.scope, frame.parent


def anchored(got, made, real):
    """A layout whose evidence is the node made here, moved to the real
    node it was made for (made nodes have no place in the file)."""
    if got is not None and got.node is made:
        return replace(got, node=real)
    return got


def _names(node: cst.CSTNode):
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Name):
            yield n
        elif isinstance(n, cst.Lambda):
            continue  # a lambda inside binds its own names
        stack.extend(n.children)
