"""What a project itself means by a mask's name.

A parameter named ``attention_mask`` beside token ids is read as the
tokenizer's mask of transformers (1 = a real token) when nothing better is
known (masks/names.py).  A project may mean the opposite: shiba's own
tokenizer binds ``attention_mask = (id_tensor == self.PAD)``, True on the
padding, and its models hand that to ``src_key_padding_mask`` as torch
wants it (review 25).  ``binds_padding`` tells whether some file of the
project binds the name to a comparison with a pad id, by a text search of
the project's files (once per process per root and name).
"""

from __future__ import annotations

import re
from typing import Dict, Tuple

from ...core.atomic import read_regular
from .callers import MAX_BYTES, python_files
from .files import project_root

_FOUND: Dict[Tuple[str, str], Tuple[bool, Tuple[str, ...]]] = {}


def binds_padding(path: str, name: str, depend=None) -> bool:
    """Whether a ``.py`` file of the project of ``path`` binds ``name`` to a
    comparison with a pad id (``attention_mask = (ids == self.PAD)``,
    ``attention_mask = ids.eq(pad_id)``, also as a dict key
    ``"attention_mask": ids == PAD``): True there means padding.
    ``depend`` is told the files the answer rests on: the one that binds it,
    else every file that names ``name`` (an edit of one may add the binding;
    a file that does not name it yet is not watched)."""
    root = project_root(path)
    key = (root, name)
    if key not in _FOUND:
        word = re.escape(name)
        pattern = re.compile(
            rf"""(?:\b{word}\s*=|["']{word}["']\s*[:\]]\s*=?)\s*\(?\s*[\w.\[\]]+\s*"""
            rf"""(?:==\s*[\w.]*pad\w*|\.eq\(\s*[\w.]*pad\w*)""",
            re.IGNORECASE,
        )
        found, naming = False, []
        for file in python_files(root) or ():
            try:
                text = read_regular(file, MAX_BYTES).decode("utf-8", "replace")
            except OSError:
                continue
            if name not in text:
                continue
            naming.append(file)
            if pattern.search(text):
                found, naming = True, [file]
                break
        if len(_FOUND) > 256:
            _FOUND.clear()
        _FOUND[key] = (found, tuple(naming))
    found, files = _FOUND[key]
    for file in files if depend is not None else ():
        depend(file)
    return found
