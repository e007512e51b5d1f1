"""Whether a file can concern attention at all, before anything is parsed
with LibCST: the trigger words (``torch_api.TRIGGER_WORDS``) read first in
the text, then in the code proper.

A word that stands only in comments and docstrings (a module that documents
``scaled_dot_product_attention`` and calls none, torch's own tree has a few
dozen) names no call, no class and no argument, so no rule can report on it:
such a file goes to the project-aware gate, as a file without the word does
(docs/reach.md, "The gate").  What the code holds is every name, attribute,
import, parameter and keyword, and every string that is not a bare
statement (``getattr(F, "scaled_dot_product_attention")`` counts).
"""

from __future__ import annotations

import ast
from typing import Sequence

from .torch_api import TRIGGER_WORDS


def text_names_a_trigger(text: str, words: Sequence[str] = TRIGGER_WORDS) -> bool:
    """The cheap test on the raw text, comments included."""
    return any(word in text for word in words)


def code_names_a_trigger(tree: ast.AST, words: Sequence[str] = TRIGGER_WORDS) -> bool:
    """Whether a trigger word stands in ``tree``'s code: any string field of
    any node (a name, an attribute, an import, a keyword, a string constant),
    except strings that are whole statements (docstrings).  Stops at the
    first one, read from the top of the file down (imports come first)."""
    stack = [tree]
    pop, AST = stack.pop, ast.AST
    while stack:
        node = pop()
        children = []
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, str):
                if any(word in value for word in words):
                    return True
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, AST):
                        if not _bare_string(item):
                            children.append(item)
                    elif isinstance(item, str) and any(word in item for word in words):
                        return True  # global, nonlocal
            elif isinstance(value, AST) and not _bare_string(value):
                children.append(value)
        stack.extend(reversed(children))
    return False


def _bare_string(node: ast.AST) -> bool:
    return (
        type(node) is ast.Expr
        and type(node.value) is ast.Constant
        and isinstance(node.value.value, str)
    )
