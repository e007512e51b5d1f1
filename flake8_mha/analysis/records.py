"""Fields of a record class: a ``@dataclass`` or a ``typing.NamedTuple``
whose instances are built by keyword or in field order (``Batch(input_ids=
ids, mask=ids.ne(PAD_ID))`` in a collate function).  A field of an instance
the code reads (``batch.mask`` of ``batch: Batch``) holds what the
constructions of the class give it (probe AN's AN13)."""

from __future__ import annotations

from typing import List, Optional

import libcst as cst

from .classes import static_kind
from .flow import ClassInfo
from .tree import last_word


def record_fields(node: cst.ClassDef) -> Optional[List[cst.AnnAssign]]:
    """The field statements, in order, of a ``typing.NamedTuple`` or of a
    ``@dataclass`` with no base (else None); ``ClassVar``s are no fields."""
    bases = [last_word(b.value) for b in node.bases]
    named = bases == ["NamedTuple"]
    decorated = any(last_word(d.decorator) == "dataclass" for d in node.decorators)
    if not (named or (decorated and not bases)):
        return None
    out = []
    for stmt in node.body.body:
        line = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and stmt.body else None
        if isinstance(line, cst.AnnAssign) and isinstance(line.target, cst.Name):
            note = line.annotation.annotation
            if last_word(note) == "ClassVar" or (
                isinstance(note, cst.Subscript) and last_word(note.value) == "ClassVar"
            ):
                continue
            out.append(line)
    return out


def field_values(resolver, flow, cls: ClassInfo, attr: str) -> Optional[list]:
    """``[(expression, env, scope)]``: what every construction of ``cls`` in
    this file gives its field ``attr`` (its default where a construction
    leaves it out); None when ``cls`` is no record class, ``attr`` no field
    of it, a construction cannot be read (a splat) or none is seen.  A copy
    with a field changed (``dataclasses.replace(b, mask=...)``,
    ``b._replace(...)``) is not read: the function that makes it may be one
    the analysis does not parse (``focus.py``), and what is read must not
    depend on that."""
    fields = record_fields(cls.node)
    names = [f.target.value for f in fields] if fields is not None else []
    if attr not in names:
        return None
    place = names.index(attr)
    default = fields[place].value
    out = []
    own = _own_builds(cls)
    for site in flow.calls:
        call = site.node
        if id(call) not in own and resolver.local_class(call.func, site.env, site.scope) is not cls:
            continue
        if any(a.star for a in call.args):
            return None
        given = [a for a in call.args if a.keyword is not None and a.keyword.value == attr]
        positional = [a for a in call.args if a.keyword is None]
        if given:
            out.append((given[0].value, site.env, site.scope))
        elif place < len(positional):
            out.append((positional[place].value, site.env, site.scope))
        elif default is not None:
            out.append((default, cls.env, cls.scope))
        else:
            return None  # the call raises: a required field left out
    return out or None


def _own_builds(cls: ClassInfo) -> set:
    """The ``cls(...)`` calls of the class's own ``@classmethod``s (``def
    collate(cls, feats, lens): ... return cls(feats, frame_mask)``: probe
    AN's AN17), by ``id``: constructions of the class."""
    out = set()
    for stmt in cls.node.body.body:
        if not isinstance(stmt, cst.FunctionDef) or not stmt.params.params:
            continue
        if static_kind(stmt) != "classmethod":
            continue
        first = stmt.params.params[0].name.value
        stack = list(stmt.body.children)
        while stack:
            n = stack.pop()
            if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                continue
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == first:
                out.add(id(n))
            stack.extend(n.children)
    return out
