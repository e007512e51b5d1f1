"""Which classes of a project file are ``torch.nn.Module``s, read with ``ast``.

A module's method that calls SDPA (MHA007 reads ``self.training`` there) is
often a subclass of a base of the project that derives from ``nn.Module`` in
another file (``class FlashSetAttention(SetAttention)``, ``SetAttention(abc.ABC,
Mixin, nn.Module)`` in ``api/modules.py``).  ``table`` says, per top-level
class of a file, how each of its bases is named: torch's module (``"torch"``),
another class of the file, or a name the file imports (its level and dotted
path), which the project follows to the file that defines it
(``Project.module_class``).
"""

from __future__ import annotations

import ast
from typing import Dict, List

from . import chains, signatures
from .chains import dotted_name
from .dict_tables import decode

VERSION = "1"
SALT = ("module-bases", VERSION)  # what ``ProjectFiles.bases_of`` keeps a file's table by
TORCH = "torch"


def table(tree: ast.Module) -> Dict[str, List[list]]:
    """``{"SetAttention": [["torch"]], "Flash": [["local", "Base"]],
    "Sub": [["import", 1, "api.modules.SetAttention"]]}``: each top-level
    class's bases that may make it a module (the others, ``abc.ABC`` or a
    mixin of another package, are left out)."""
    imports = chains.imports(tree)
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    out: Dict[str, List[list]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = []
        for base in node.bases:
            dotted = dotted_name(base)
            if dotted is None:
                continue
            head, _, rest = dotted.partition(".")
            if head in classes and not rest:
                bases.append(["local", head])
                continue
            got = imports.get(head)
            if got is None:
                continue
            level, path = got
            full = ".".join(p for p in (path, rest) if p)
            if level == 0 and _torch_module(full):
                bases.append([TORCH])
            elif level or not full.startswith(("torch.", "abc.", "typing.")):
                bases.append(["import", level, full])
        if bases:
            out[node.name] = bases
    return out


def table_of(data: bytes) -> Dict[str, List[list]]:
    """``table`` of a file's bytes; ``{}`` when they do not parse."""
    try:
        return table(signatures.parse(decode(data)))
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError):
        return {}


def valid(got) -> bool:
    """A ``table`` as it writes it (one read from the store may not be)."""
    return isinstance(got, dict) and all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(b, list) and b for b in v)
        for k, v in got.items()
    )


def _torch_module(full: str) -> bool:
    """``torch.nn.Module``, or a class of ``torch.nn`` (``nn.TransformerEncoderLayer``)."""
    if not full.startswith("torch.nn."):
        return False
    last = full.rsplit(".", 1)[-1]
    return last[:1].isupper() and full.count(".") in (2, 3)
