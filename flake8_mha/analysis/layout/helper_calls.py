"""The layout of a call of a helper another project file defines, read in
the helper's own file (``helper_forms.py``) and applied at the call: a part
of ``LayoutCalls`` (calls.py)."""

from __future__ import annotations

import dataclasses
from typing import Optional

import libcst as cst

from .domain import Layout
from .helper_forms import read_chain, read_stated


CYCLE = Layout((), None, "cycle")  # met again while being computed: no say in a join


def real(v: Optional[Layout]) -> Optional[Layout]:
    return None if v is CYCLE else v


def said(v: Optional[Layout]) -> Optional[Layout]:
    """``real(v)``, or None when it states no axis's role (``x.flatten(0,
    1)`` of a ``[batch, num_series, ...]`` comment whose other axes say
    nothing): a swap of it is a swap of data of unknown layout."""
    v = real(v)
    if v is None or v.conforms or v.disagree or any(r is not None for r in v.roles):
        return v
    return None


class HelperCalls:
    """Mixed into ``LayoutCalls``: ``eval``, ``ctx``, ``swap_layout``,
    ``_marks`` and ``_swap_marks`` come from the evaluator."""

    def _chain_helper(self, node: cst.Call, env, scope, frame, depth) -> Optional[Layout]:
        """A call of a helper another project file defines whose one return
        chains axis moves on its parameter (``to_tokens(fmap)`` of ``return
        fmap.flatten(2).permute(2, 0, 1)``; ``def to_time_major(x): return
        x.transpose(0, 1)``, or its ``rearrange``): the caller's argument moved
        so, as if the chain were written at the call, which is the evidence
        (a swap of data of unknown layout fed to a module: the conversion)."""
        got = self._helper_form(node, env, scope, "layout-chain", read_chain)
        if got is None:
            return None
        arg = got.args.get(got.form["params"][0])
        if arg is None:
            return None
        made = self.__dict__.setdefault("_chains", {})
        if id(node) not in made:  # one made chain per call, kept as long as the evaluator
            chain, ids = arg, set()
            for method, ints in got.form["steps"]:
                chain = cst.Call(
                    cst.Attribute(chain, cst.Name(method)), [_literal(i) for i in ints]
                )
                ids.add(id(chain))
            made[id(node)] = (node, chain, ids)
        chain, ids = made[id(node)][1:]
        if id(node) in self._marks():  # fed to a module call: so is the chain it stands for
            self._swap_marks.update(ids)
        out = self.eval(chain, env, scope, frame, depth)
        if out is not None and id(out.node) in ids:
            out = dataclasses.replace(out, node=node)
        return out

    def _stated_helper(self, node: cst.Call, env, scope) -> Optional[Layout]:
        """A call of a helper another project file defines whose one return
        has a layout its own file states (``return h.mean(2).transpose(0, 1)
        # (T, B, D)``: probe AD's LA03a), whatever it is handed: that layout,
        its evidence in the helper's file."""
        got = self._helper_form(node, env, scope, "layout-stated", read_stated)
        if got is not None and got.form.get("swap") is True:
            return self.swap_layout(node)  # an axis swap of what it computes: the conversion
        if got is None or not got.form.get("roles"):
            return None
        form = got.form
        where = (got.where or "", form.get("line"), form.get("code", ""))
        return Layout(tuple(form["roles"]), node, form.get("how", "helper"), origin=where)

    def _helper_form(self, node: cst.Call, env, scope, salt: str, read):
        """``helper_form`` of the project for a helper another project file
        defines (``program/returns.py``), else None."""
        from ..program.returns import ReturnsFiles

        project = getattr(self.ctx, "project", None)
        if not isinstance(project, ReturnsFiles):
            # a file the layout reads for the linted one: its helpers' files, from its place
            path = getattr(project, "path", None)
            if not path:
                return None
            made = self.__dict__.setdefault("_helper_files", {})
            if path not in made:
                made[path] = ReturnsFiles(path)
            project = made[path]
        try:
            return project.helper_form(node, env, scope, salt, read)
        except (OSError, ValueError, RecursionError):
            return None


def _literal(i: int) -> cst.Arg:
    """``i`` as a call's argument (``-1`` as a minus applied to ``1``)."""
    if i < 0:
        return cst.Arg(cst.UnaryOperation(cst.Minus(), cst.Integer(str(-i))))
    return cst.Arg(cst.Integer(str(i)))
