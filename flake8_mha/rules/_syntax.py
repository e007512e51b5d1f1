"""Small questions about syntax that several rules ask."""

from __future__ import annotations

from typing import Optional

import libcst as cst


def same(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """The same expression, written the same way (whitespace aside)."""
    return a.deep_equals(b)


def root_name(node: cst.CSTNode) -> Optional[str]:
    """``self`` in ``self.a.b``; None when the chain does not start with a name."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def dotted(node: cst.CSTNode) -> str:
    """``self.a.b`` as text; a part that is not a name is written ``?``."""
    if isinstance(node, cst.Attribute):
        return dotted(node.value) + "." + node.attr.value
    return node.value if isinstance(node, cst.Name) else "?"
