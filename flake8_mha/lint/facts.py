"""What the program decides about a finding, once the rules have judged one
file's calls: which judgements belong to each caller of a followed function
instead (``decided_by_callers``, ``fills_judged_by_callers``), which calls
never run in this program (``dead_in_program``, ``never_built``), and what
the messages and evidence say of the facts the project fixed
(``settled``, ``from_callers``).  See docs/reach.md.
"""

from __future__ import annotations

from typing import Dict, Set

import libcst as cst

from ..core import positions, torch_api
from ..analysis.events import FillCall, ModuleCall, SdpaCall
from ..analysis.flow import DefKind, ScopeKind, lookup, walk
from ..analysis.program.callsites import Project
from ..analysis.program.wrapped import WrappedModuleCall
from ..analysis.program.chains import VARIANT
from ..analysis.program.fills import FILL_SINKS, KV
from ..analysis.program.local_names import function_key
from ..analysis.values import branch_truth, inherited_attr
from ..analysis.classes import class_default, dotted_text, handed_in_file
from ..analysis.program.built import MISSING


# the SDPA arguments each code judges (when the wrapper's parameters carry all
# of them, the code judges them at the wrapper's call sites instead)
_JUDGES = {
    "MHA002": ("attn_mask",),
    "MHA003": ("attn_mask",),
    "MHA004": ("attn_mask",),
    "MHA009": ("attn_mask",),
    "MHA006": ("attn_mask", "is_causal"),  # the pair: judged at the call only when both pass
    "MHA007": ("dropout_p",),
    "MHA015": ("key", "value"),
}


# arguments a code does not judge but whose value decides the damage it reports:
# MHA006's pair raises only with dropout (a rate the project fixes at 0 is said)
_DAMAGE_ARGS = {"MHA006": ("dropout_p",)}

# the arguments of a torch module's construction or call each code judges by
# value (where a fact of the project about them is said in the message)
_SPECS = tuple(torch_api.MODULES.values())
_HEADS = ("embed_dim", "num_heads", "d_model", "nhead", "kdim", "vdim")
_FLAGS = tuple(sorted({p.flag for s in _SPECS for p in s.causal_pairs}))
_MASKS = tuple(sorted({a for s in _SPECS for a in s.mask_args}))
_JUDGES_MODULES = {
    "MHA001": ("batch_first",),
    "MHA005": _FLAGS + _MASKS,
    "MHA008": _HEADS,
    "MHA014": _HEADS,
    "MHA101": ("num_heads", "nhead"),
    "MHA901": ("batch_first",),
    "MHA902": ("batch_first",),
}


def decided_by_callers(events, project, args_out=None) -> Dict[int, Set[str]]:
    """``id(event) -> codes`` not to judge at an SDPA call (or a wrapper call)
    inside a function of this file that the file's own calls follow through
    its summary: what that function's parameters carry there is each
    caller's, and is judged at each call (RULES.md: where the fact enters the
    chain), not joined over the callers inside the function.  A module call
    whose masks come some from the parameters, some from in here, puts the
    former in ``args_out`` (``id(event) -> argument names``): only those are
    left to the callers."""
    if project is None:
        return {}
    out: Dict[int, Set[str]] = {}
    lambdas = getattr(project, "lambdas", {})
    for ev in events:  # the call a followed lambda makes
        sinks = lambdas.get(id(ev.site.node)) if isinstance(ev, SdpaCall) else None
        if sinks:
            out[id(ev)] = {c for c, judged in _JUDGES.items() if sinks.issuperset(judged)}
    own = project.own_name()
    followed: Set[str] = set()
    for ev in events:
        through = getattr(ev, "through", None)
        if through is not None:
            steps = through.get("chain") or [[through["file"], through["function"]]]
            followed.update(name for file, name in steps if file == own)
    for key in list(followed):  # the other classes a held module may be
        followed |= project.kinds_run(key) if hasattr(project, "kinds_run") else set()
    if not followed:
        return out
    for ev in events:
        if not isinstance(ev, (SdpaCall, ModuleCall, FillCall)):
            continue
        key = function_key(ev.site.scope)
        if key not in followed:
            continue
        summary = project.effective(project.path, key)
        sinks = set(summary["reach"]) if summary else set()
        if isinstance(ev, FillCall):
            # a fill or an addition of scores a parameter's mask reaches
            # (Whisper's ``self.qkv_attention(q, k, v, mask)`` in a followed
            # ``forward``): each caller's mask is judged at its call
            if sinks & set(FILL_SINKS):
                out[id(ev)] = set(FILL_JUDGES)
            continue
        if isinstance(ev, ModuleCall):
            # a held module's mask that a parameter gives (also through a
            # wrapper's call, ``self.attn(x, mask)``): each caller's mask is
            # judged at its call (MHA003, MHA004), not their join in here; a
            # mask made in here (a causal mask beside the callers' padding, or
            # fairseq's ``tokens.ne(pad)`` handed to a wrapper) is judged here
            given = [arg for arg in ev.spec.mask_args if ev.args.given(arg)]
            callers = {
                arg
                for arg in given
                if f"{ev.spec.name}.{arg}" in sinks
                and (
                    not isinstance(ev, WrappedModuleCall)
                    or _from_parameter(ev.args.get(arg), ev.site)
                )
            }
            if given and callers == set(given):
                out[id(ev)] = set(WrappedModuleCall.MASK_CODES)
            elif callers and args_out is not None:
                args_out[id(ev)] = callers
            continue
        # what each sink takes from this function's parameters (a block reached with
        # two masks, ``VARIANT``, takes one from each: BART's decoder layer, its own
        # causal mask and the encoder's padding): an argument made in here, which
        # reads none of them, is judged here (the causal mask), the rest at the callers
        mapped: Dict[str, Set[str]] = {}
        for k, how in (summary["reach"] if summary else {}).items():
            mapped.setdefault(k.split(VARIANT)[0], set()).add(how["param"])
        codes = {
            c
            for c, judged in _JUDGES.items()
            if sinks.issuperset(judged) or all(a in mapped for a in judged)
            if all(
                _may_read(ev.args.get(a), ev.site.env, ev.site.scope, mapped.get(a, ()), 0)
                for a in judged
            )
        }
        if KV in sinks:  # a parameter's mask multiplied into its keys: each caller's (MHA015)
            codes.add("MHA015")
        if codes:
            out[id(ev)] = codes
    return out


def _may_read(expr, env, scope, params, depth: int) -> bool:
    """Whether ``expr`` (read in ``env``, ``scope``) may read one of ``params``
    (parameters of the function there), through names assigned in the
    function; True where it cannot tell (an attribute of ``self`` named a
    mask, a name bound otherwise)."""
    if expr is None or depth > 4:
        return True
    for n in walk(expr):
        if (
            isinstance(n, cst.Attribute)
            and isinstance(n.value, cst.Name)
            and n.value.value == "self"
        ):
            if any(w in n.attr.value.lower() for w in ("mask", "bias")):
                return True  # a mask kept on ``self``: maybe a parameter's
            continue
        if not isinstance(n, cst.Name):
            continue
        for d in lookup(n.value, env, scope):
            if d.kind == DefKind.SELF:
                continue
            if d.kind == DefKind.PARAM:
                if n.value in params:
                    return True
            elif d.kind == DefKind.ASSIGN and d.node is not None:
                if _may_read(d.node, d.env, d.scope, params, depth + 1):
                    return True
            elif d.kind not in (DefKind.IMPORT, DefKind.DEF, DefKind.CLASS):
                return True
    return False


def _from_parameter(expr, site) -> bool:
    """Whether ``expr`` reads a parameter of the function around ``site``."""
    for n in walk(expr) if expr is not None else ():
        if isinstance(n, cst.Name) and any(
            d.kind == DefKind.PARAM for d in lookup(n.value, site.env, site.scope)
        ):
            return True
    return False


# the codes that judge a fill's mask by its meaning
FILL_CODES = frozenset({"MHA002", "MHA003"})
# the codes that judge the mask of a call that reaches a fill or an addition
# (MHA012: a mask multiplied into the scores; MHA015: one multiplied into the keys)
FILL_JUDGES = FILL_CODES | {"MHA004", "MHA012", "MHA015"}


def fills_judged_by_callers(events, project, module, flow) -> Set[int]:
    """``id`` of this file's fill calls that a call in this file reaches
    through a followed function (a ``FillCall``): their mask is judged at
    each such call, not joined over the callers at the fill."""
    lines = _reached_lines(events, project, ("ignore", "keep"))
    if not lines:
        return set()
    fills = [
        s.node
        for s in flow.calls
        if isinstance(s.node.func, cst.Attribute)
        and s.node.func.attr.value in ("masked_fill", "masked_fill_", "where")
    ]
    starts = positions.start_positions(module, fills)
    return {id(n) for n in fills if starts[id(n)][0] in lines}


# a term of the scores judged at its callers: the report's code, and its op
_TERMS = {"add": "MHA004", "mul": "MHA012"}


def additions_judged_by_callers(events, project, module, reports) -> Set[int]:
    """``id`` of the MHA004 reports at a term added to this file's scores
    (``qk + mask``), and of the MHA012 reports at a mask multiplied into them
    (``scores * mask``), that a call in this file reaches through a followed
    function (a ``FillCall`` whose door is "add" or "mul"): the mask is
    judged at each such call instead, not joined over the callers there."""
    out: Set[int] = set()
    for op, code in _TERMS.items():
        lines = _reached_lines(events, project, (op,))
        terms = [rep for c, rep in reports if c == code and rep.evidence.get("op") == op]
        if not lines or not terms:
            continue
        starts = positions.start_positions(module, [rep.node for rep in terms])
        out.update(id(rep) for rep in terms if starts[id(rep.node)][0] in lines)
    return out


def _reached_lines(events, project, doors) -> Set[int]:
    """The lines of this file's fills (of a door among ``doors``) that a
    ``FillCall`` of this file reaches through a followed function."""
    if project is None:
        return set()
    own = project.own_name()
    return {
        ev.through["line"]
        for ev in events
        if isinstance(ev, FillCall) and ev.door in doors and ev.through["file"] == own
    }


def dead_in_program(site) -> bool:
    """Whether the call at ``site`` sits in a branch that never runs in this
    program: under ``if self.causal:`` where every construction of the class
    in the project passes ``causal=False`` (``self.causal = causal`` in its
    ``__init__``), under ``if use_mask:`` where every call leaves that
    parameter off, or under a test of a constant.  A plain name or
    ``self.<attr>`` is tested (what the program fixes, as the values
    analysis reads it: docs/reach.md, "Facts from the callers"), also
    through ``not``, ``is None``/``is not None``, and ``and``/``or`` of such
    tests when the known parts decide the whole.  A conditional expression
    around the call counts as an ``if`` (``nn.MultiheadAttention(dim, heads)
    if heads else nn.Identity()``, every call passing ``heads=0``)."""
    for test, polarity, env in site.conds:
        truth = branch_truth(test, env, site.scope)
        if truth is not None and truth != polarity:
            return True
    inner = (*site.parents, site.node)
    for i, node in enumerate(inner[:-1]):
        if isinstance(node, cst.IfExp) and inner[i + 1] is not node.test:
            truth = branch_truth(node.test, site.env, site.scope)
            if truth is not None and truth != (inner[i + 1] is node.body):
                return True
    return False


_BY_METHOD = "by method"  # the key of ``dead_method``'s index in its memo


def dead_method(site, calls, memo: Dict, depth: int = 0) -> bool:
    """Whether the method around ``site`` runs only where the program never
    goes: every call of it in its file is ``self.<name>(...)`` under a
    branch ``dead_in_program`` decides the other way, or inside such a
    method in turn (DETR's ``forward_pre``, called only under ``if
    self.normalize_before:`` where every construction leaves it False).  A
    method called nowhere in its file, or named otherwise than called, may
    be called from elsewhere: not dead."""
    scope = site.scope
    while scope is not None and scope.kind != ScopeKind.FUNCTION:
        scope = scope.parent
    if scope is None or scope.parent is None or scope.parent.kind != ScopeKind.CLASS:
        return False
    key = id(scope)
    if key in memo:
        return memo[key]
    memo[key] = False  # recursion: not dead
    name = scope.node.name.value
    if name.startswith("__") or name == "forward" or depth > 3:
        return False
    index = memo.get(_BY_METHOD)
    if index is None:  # the file's ``self.<name>(...)`` calls by name, made once per file
        index = {}
        for c in calls:
            func = c.node.func
            if (
                isinstance(func, cst.Attribute)
                and isinstance(func.value, cst.Name)
                and func.value.value == "self"
            ):
                index.setdefault(func.attr.value, []).append(c)
        memo[_BY_METHOD] = index
    mine = index.get(name, ())
    got = bool(mine) and all(
        (c.conds and dead_in_program(c)) or dead_method(c, calls, memo, depth + 1) for c in mine
    )
    memo[key] = got
    return got


def never_built(ev, project) -> bool:
    """A module built as the default of an ``__init__`` parameter
    (``self.self_attn = self_attention or nn.MultiheadAttention(...)``) where
    every construction of the class in the project builds a module for that
    parameter itself: the default never runs in this program, and what its
    arguments would do does no damage (docs/reach.md)."""
    default = ev.site.init_default
    if default is None or not isinstance(project, Project):
        return False
    return project.always_handed(ev.site.scope.cls.name, default[0])


def handed_another(ev, project) -> bool:
    """A torch module built from a constructor parameter holding a class
    (``self.attn = attn_cls(dim, heads)``, read as the class its default or
    this file's constructions name, ``classes.class_default``), when a
    construction elsewhere in the project hands that parameter something
    else: not every instance is this module, and what the others are is
    not read here."""
    func = ev.site.node.func
    scope = ev.site.scope
    if not isinstance(func, cst.Name) or scope is None:
        return False
    defs = lookup(func.value, ev.site.env, scope)
    if len(defs) != 1 or defs[0].kind != DefKind.PARAM or scope.cls is None:
        return False
    handed = (
        project.classes_passed(scope.cls.name, func.value) if isinstance(project, Project) else None
    )
    if handed is None:  # the project not read: only what this file's constructions name
        return handed_in_file(defs[0].scope, func.value) is None
    default = defs[0].node.default if isinstance(defs[0].node, cst.Param) else None
    names = set(handed)
    if MISSING in names:  # left out: the default class
        names.discard(MISSING)
        names.add(dotted_text(default) or "?")
    read = dotted_text(class_default(func, ev.site.env, scope))
    return read is None or names != {read}


def settled(report, ev, project, carried: Set[str]):
    """A finding inside a class whose ``__init__`` parameters the project fixes
    (every construction passes the same literal) says so: the value is the
    program's, not the class's API.  The message names only the parameters
    the judged arguments carry (``carried``): a dropout rate the project
    fixes says nothing about a module's ``batch_first``.  The evidence keeps
    them all, for the confirmer's witness (the module the program builds)."""
    settled = getattr(project, "settled", None)
    key = function_key(ev.site.scope) if settled else None
    cls = key.split(".")[0] if key and "." in key else None
    facts = settled.get(cls) if cls else None
    if not facts:
        return report
    report.evidence["constructed"] = {p: fact[0] for p, fact in facts.items()}
    told = {p: fact for p, fact in facts.items() if p in carried}
    if told:
        passed = ", ".join(f"{p}={f[0]!r}" for p, f in sorted(told.items()) if not f[2])
        left = ", ".join(f"{p}={f[0]!r}" for p, f in sorted(told.items()) if f[2])
        count = max(f[1] for f in told.values())
        said = [f"passes {passed}"] if passed else []
        said += [f"leaves the default {left}"] if left else []  # probe AA's AA26
        report.message += (
            f"; every construction of {cls} in the project ({count}) {' and '.join(said)}"
        )
    return report


def carried(code: str, ev) -> Set[str]:
    """The names whose value the arguments a code judges carry as they are:
    the argument itself, through locals, ``self.<attr>`` (and what its
    class assigns it), conditions, boolean and arithmetic operations; not
    into calls or subscripts (a mask made from ``self.pad_id`` carries its
    meaning, not the value of ``pad_id``).  A fact the project gave about a
    parameter outside these was not what the finding's judgement rests on."""
    if isinstance(ev, FillCall):
        return set()  # a mask's meaning: no parameter's value decides it
    args = ev.args.args
    keys = (_JUDGES if isinstance(ev, SdpaCall) else _JUDGES_MODULES).get(code, ())
    keys = keys + _DAMAGE_ARGS.get(code, ())
    stack = [(args[k], ev.site.env, ev.site.scope, 0) for k in keys if k in args]
    names: Set[str] = set()
    while stack:
        node, env, scope, depth = stack.pop()
        if isinstance(node, cst.Name):
            names.add(node.value)
            defs = lookup(node.value, env, scope) if depth < 6 else ()
        elif isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
            names.add(node.attr.value)
            owners = lookup(node.value.value, env, scope) if depth < 6 else ()
            if not owners or any(d.kind != DefKind.SELF for d in owners):
                continue
            cls = owners[0].extra
            defs = cls.attrs.get(node.attr.value) or inherited_attr(cls, node.attr.value)
        else:
            parts = {
                cst.IfExp: ("test", "body", "orelse"),
                cst.BooleanOperation: ("left", "right"),
                cst.BinaryOperation: ("left", "right"),
                cst.UnaryOperation: ("expression",),
                cst.Comparison: ("left",),
            }.get(type(node), ())
            stack.extend((getattr(node, p), env, scope, depth) for p in parts)
            if isinstance(node, cst.Comparison):
                stack.extend((c.comparator, env, scope, depth) for c in node.comparisons)
            continue
        for d in defs:
            if d.kind == DefKind.ASSIGN and d.node is not None:
                stack.append((d.node, d.env, d.scope, depth + 1))
    return names


# the facts of SDPA's arguments a witness reads from a finding's evidence
_WITNESSED = ("dropout_p", "is_causal")


def from_callers(report, ev, asked, carried: Set[str]) -> None:
    """What the project's callers decided in a finding, from the asks its
    rule made of the project while judging it (``Project.asks``): a
    parameter every call leaves off is said in the message (the value is
    the program's); a class never built, or a function never called, in the
    project is judged by its API as before, and the message says its
    callers are outside the project.  An SDPA argument that is a parameter
    every call passes alike goes into the evidence (``program``; and as the
    argument's value when the rule did not know it), for the confirmer's
    witness: the value the program really passes."""
    called: Dict[str, Dict[str, tuple]] = {}
    outside: Dict[str, str] = {}  # the class or function -> how it would be used
    key = function_key(ev.site.scope) if isinstance(ev, SdpaCall) else None
    for kind, owner, param, answer in asked:
        if answer[0] in ("settled", "known") and kind == "called" and owner == key:
            # what the program passes, for the witness (its value, where the
            # rule did not know it: a value that is not off)
            for arg in _WITNESSED:
                expr = ev.args.args.get(arg)
                if isinstance(expr, cst.Name) and expr.value == param and arg in report.evidence:
                    if report.evidence[arg] is None:
                        report.evidence[arg] = answer[1]
                    report.evidence.setdefault("program", {})[arg] = answer[1]
        if param not in carried:
            continue  # not what the judgement rests on: no word in the message
        if answer[0] == "settled" and kind == "called":
            called.setdefault(owner, {})[param] = answer[1:]
        elif answer[0] == "outside":
            if kind == "built" or owner.endswith(".forward"):
                outside.setdefault(owner.split(".")[0], "built")
            else:
                outside.setdefault(owner, "called")
    for fn, facts in sorted(called.items()):
        shown = ", ".join(f"{p}={v!r}" for p, (v, _) in sorted(facts.items()))
        count = max(n for _, n in facts.values())
        report.message += f"; every call of {fn} in the project ({count}) has {shown}"
        report.evidence.setdefault("called", {})[fn] = {p: v for p, (v, _) in facts.items()}
    for name, verb in outside.items():
        report.message += f"; {name} is never {verb} in the project: its callers are outside it"
    if outside:
        report.evidence["callers_outside"] = list(outside)
