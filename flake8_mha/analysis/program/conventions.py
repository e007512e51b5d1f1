"""What a project itself means by a mask's name.

A parameter named ``attention_mask`` beside token ids is read as the
tokenizer's mask of transformers (1 = a real token) when nothing better is
known (masks/names.py).  A project may mean the opposite: shiba's own
tokenizer binds ``attention_mask = (id_tensor == self.PAD)``, True on the
padding, and its models hand that to ``src_key_padding_mask`` as torch
wants it (review 25).  ``binds_padding`` tells whether some file of the
project binds the name to a comparison with a pad id, by a text search of
the project's files (once per process per root and name).

``encoder_layer`` tells whether the project hands a class of its own to
``nn.TransformerEncoder`` as its layer: torch's encoder turns the
``src_key_padding_mask`` it is given into a float mask (0 to keep, -inf at
the padding) before each layer's ``forward`` (torch 2.13,
``F._canonical_mask``), so that parameter's name says nothing of True
there (release review 28's perttf).
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


_LAYERS: Dict[Tuple[str, str], Tuple[bool, Tuple[str, ...]]] = {}
_ENCODER = "TransformerEncoder"


def encoder_layer(path: str, cls: str, depend=None) -> bool:
    """Whether a ``.py`` file of the project of ``path`` builds
    ``nn.TransformerEncoder(<cls>(...), n)`` (also ``encoder_layer=``, or
    through one name: ``layer = <cls>(...)`` then
    ``nn.TransformerEncoder(layer, n)``).  ``depend``: as ``binds_padding``'s."""
    root = project_root(path)
    key = (root, cls)
    if key not in _LAYERS:
        word = re.escape(cls)
        start = rf"\b{_ENCODER}\(\s*(?:encoder_layer\s*=\s*)?"
        direct = re.compile(start + rf"(?:[\w.]+\.)?{word}\s*\(")
        bound = re.compile(rf"\b(\w+)\s*=\s*(?:[\w.]+\.)?{word}\s*\(")
        found, naming = False, []
        for file in python_files(root) or ():
            try:
                text = read_regular(file, MAX_BYTES).decode("utf-8", "replace")
            except OSError:
                continue
            if cls not in text or _ENCODER not in text:
                continue
            naming.append(file)
            names = {m.group(1) for m in bound.finditer(text)}
            if direct.search(text) or any(
                re.search(start + re.escape(n) + r"\b", text) for n in names
            ):
                found, naming = True, [file]
                break
        if len(_LAYERS) > 256:
            _LAYERS.clear()
        _LAYERS[key] = (found, tuple(naming))
    found, files = _LAYERS[key]
    for file in files if depend is not None else ():
        depend(file)
    return found
