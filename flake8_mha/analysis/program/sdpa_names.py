"""The names a file calls SDPA by (``F.scaled_dot_product_attention``,
``from torch.nn.functional import scaled_dot_product_attention as sdpa``),
read with Python's ``ast`` for the summaries (``summaries.py``)."""

from __future__ import annotations

import ast
from typing import Tuple

from ...core.torch_api import SDPA_NAME, SDPA_QUALNAME, canonical
from . import forms
from .chains import dotted_name, statements


def sdpa_names_of(tree: ast.Module) -> Tuple[set, set]:
    """(names bound to SDPA itself, names bound to torch.nn.functional or torch)."""
    direct, modules = set(), set()
    for node in statements(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if canonical(full) == SDPA_QUALNAME:
                    direct.add(a.asname or a.name)
                elif full in ("torch.nn.functional", "torch.nn", "torch._C._nn"):
                    modules.add((a.asname or a.name, full))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "torch":
                    if a.asname:
                        modules.add((a.asname, a.name))
                    else:
                        modules.add(("torch", "torch"))
    for local, full in forms.called_imports(tree):
        if canonical(full) == SDPA_QUALNAME:
            direct.add(local)
        elif full in ("torch.nn.functional", "torch.nn", "torch._C._nn", "torch"):
            modules.add((local, full))
    return direct, modules


def is_sdpa(call: ast.Call, sdpa_names) -> bool:
    direct, modules = sdpa_names
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in direct
    text = dotted_name(func)
    if text is None or not text.endswith("." + SDPA_NAME):
        return False
    head, _, rest = text.partition(".")
    for local, full in modules:
        if head == local:
            return canonical(f"{full}.{rest}") == SDPA_QUALNAME
    return False
