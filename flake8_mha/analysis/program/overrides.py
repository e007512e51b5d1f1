"""Overrides of a class's hook method by its subclasses in other project files
(part of ``callsites.Project``).

A base class calls ``self.expand_heads(mask)`` on its way to a sink; a
subclass in another file overrides ``expand_heads`` (probe AH's AH05:
``class ToothRelationAttention(MaskedSelfAttention)`` in ``tooth.py``).  Its
instances run the override at the base's call.  ``overrides_elsewhere``
finds such subclasses among the files that import the base's file, and
``ReturnsFiles.override_form`` reads the override with a rule's own reading,
in its own file, ``self`` unknown, as ``returns.helper_reading`` reads a
helper.

Only a subclass that is used counts: its name appears in a project file
other than in its own ``class`` statement (built, handed, registered).  A
class that overrides the hook but is never named anywhere never runs it.

``set_elsewhere`` reads the same subclasses for what they set a class
attribute to (probe AN's AN03: a base's ``attn_pdrop = 0.0``, a finetuning
subclass's 0.1), which ``values.py`` joins with the base's own value.
"""

from __future__ import annotations

import ast
import os
from typing import List, Tuple

from ...core.atomic import read_regular
from ...core.lines import word_count
from . import callers, signatures
from .built import names_class

MAX_OVERRIDERS = 8  # subclasses read per hook: beyond, the base's call is left as it reads


class Overrides:
    """A mixin of ``callsites.Project``: it reads ``path``, ``files``,
    ``_answers``, ``_project_files`` and ``depend`` of the project."""

    def overrides_elsewhere(self, cls: str, method: str) -> List[Tuple[str, str]]:
        """(file, subclass) for each class of another project file that
        subclasses this file's ``cls`` directly and defines a plain ``method``
        of its own, and is named somewhere else in the project; [] when the
        project is not read."""
        if not getattr(self, "files", None):
            return []
        asked = ("overrides", cls, method)  # once per linted file (``Project.own``)
        if asked not in self._answers:
            try:
                self._answers[asked] = self._overriders(cls, method)
            except (OSError, ValueError, RecursionError):
                self._answers[asked] = []
        return self._answers[asked]

    def _texts(self) -> dict:
        """The project's files' texts; each other file is a dependency (a
        subclass written there later changes the answer)."""
        own = os.path.abspath(self.path)
        texts = {}
        for name in self._project_files():
            try:
                texts[name] = read_regular(name, callers.MAX_BYTES).decode("utf-8", "replace")
            except OSError:
                continue
            if name != own:
                self.depend(name)
        return texts

    def _overriders(self, cls: str, method: str) -> List[Tuple[str, str]]:
        found = [
            (name, node.name)
            for name, node in self._heirs(cls, "def " + method)
            if _overrides(node, method)
        ]
        return found[:MAX_OVERRIDERS]

    def _heirs(self, cls: str, word: str):
        """(file, class) for each class of another project file whose text
        holds ``word`` that subclasses this file's ``cls`` directly and is
        named somewhere else in the project (``_named_elsewhere``)."""
        own = os.path.abspath(self.path)
        texts = self._texts()
        for name, text in texts.items():
            if name == own or cls not in text or word not in text:
                continue
            try:
                tree = signatures.parse(text)
            except (SyntaxError, ValueError):
                continue
            for node in tree.body:
                if (
                    isinstance(node, ast.ClassDef)
                    and any(names_class(b, {cls}) for b in node.bases)
                    and _named_elsewhere(node.name, name, texts)
                ):
                    yield name, node

    def set_elsewhere(self, cls: str, attr: str, methods_only: bool) -> list:
        """What the used subclasses of this file's ``cls`` in other project
        files set ``attr`` to: the literal of each assignment, or None when
        one assigns anything else (probe AN's AN03: the base reads
        ``dropout_p=self.attn_pdrop`` with its ``attn_pdrop = 0.0``, a
        subclass of another file sets 0.1).  A class-body assignment counts
        unless ``methods_only`` (the base sets the attribute on the instance,
        which hides the class's); ``self.<attr> = ...`` in a method always
        does.  [] when the project is not read or no subclass sets it."""
        got = self.setters_elsewhere(cls, attr, methods_only)
        return None if got is None else [value for _, _, value in got]

    def setters_elsewhere(self, cls: str, attr: str, methods_only: bool):
        """``set_elsewhere``'s answer as (file, subclass, value) for each
        assignment (a finding names the subclass); None as it says."""
        if not getattr(self, "files", None):
            return []
        asked = ("set", cls, attr, methods_only)
        if asked not in self._answers:
            try:
                found = [
                    (name, node.name, value)
                    for name, node in self._heirs(cls, attr)
                    for value in _assigned(node, attr, methods_only)
                ]
            except (OSError, ValueError, RecursionError):
                found = [("", "", MISSING)]
            self._answers[asked] = None if any(v is MISSING for *_, v in found) else found
        return self._answers[asked]


MISSING = object()  # a value ``set_elsewhere`` cannot read


def _assigned(node: ast.ClassDef, attr: str, methods_only: bool) -> list:
    """The values ``node`` assigns to ``attr``: in its body (unless
    ``methods_only``) and as ``self.<attr>`` in its methods."""
    out = []
    for item in node.body:
        if isinstance(item, (ast.Assign, ast.AnnAssign)) and not methods_only:
            targets = item.targets if isinstance(item, ast.Assign) else [item.target]
            if any(isinstance(t, ast.Name) and t.id == attr for t in targets):
                out.append(_constant(item.value))
        elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.args.args:
            me = item.args.args[0].arg
            for sub in ast.walk(item):
                if isinstance(sub, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                    targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                    if any(
                        isinstance(t, ast.Attribute)
                        and t.attr == attr
                        and isinstance(t.value, ast.Name)
                        and t.value.id == me
                        for t in targets
                    ):
                        out.append(
                            MISSING if isinstance(sub, ast.AugAssign) else _constant(sub.value)
                        )
    return out


def _constant(value):
    """The number, string, bool or None ``value`` writes, else ``MISSING``."""
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
        inner = _constant(value.operand)
        return (
            -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else MISSING
        )
    if isinstance(value, ast.Constant) and isinstance(
        value.value, (int, float, str, bool, type(None))
    ):
        return value.value
    return MISSING


def _overrides(node: ast.ClassDef, method: str) -> bool:
    """A subclass defining a plain ``def method(self, ...)``."""
    return any(
        isinstance(item, ast.FunctionDef) and item.name == method and not item.decorator_list
        for item in node.body
    )


def _named_elsewhere(sub: str, where: str, texts: dict) -> bool:
    """The subclass's name in another project file, or twice in its own."""
    return any(word_count(sub, text) > (1 if name == where else 0) for name, text in texts.items())
