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


def binds_padding(path: str, name: str, depend=None) -> bool:
    """Whether a ``.py`` file of the project of ``path`` binds ``name`` to a
    comparison with a pad id (``attention_mask = (ids == self.PAD)``,
    ``attention_mask = ids.eq(pad_id)``, also as a dict key
    ``"attention_mask": ids == PAD``): True there means padding.
    ``depend`` is told the files the answer rests on: the one that binds it,
    else every file that names ``name`` (an edit of one may add the binding;
    a file that does not name it yet is not watched)."""
    word = re.escape(name)
    pattern = re.compile(
        rf"""(?:\b{word}\s*=|["']{word}["']\s*[:\]]\s*=?)\s*\(?\s*[\w.\[\]]+\s*"""
        rf"""(?:==\s*[\w.]*pad\w*|\.eq\(\s*[\w.]*pad\w*)""",
        re.IGNORECASE,
    )
    return _scan(("padding", name), path, (name,), lambda text: bool(pattern.search(text)), depend)


_ENCODER = "TransformerEncoder"


def encoder_layer(path: str, cls: str, depend=None) -> bool:
    """Whether a ``.py`` file of the project of ``path`` builds
    ``nn.TransformerEncoder(<cls>(...), n)`` (also ``encoder_layer=``, or
    through one name: ``layer = <cls>(...)`` then
    ``nn.TransformerEncoder(layer, n)``).  ``depend``: as ``binds_padding``'s."""
    word = re.escape(cls)
    start = rf"\b{_ENCODER}\(\s*(?:encoder_layer\s*=\s*)?"
    direct = re.compile(start + rf"(?:[\w.]+\.)?{word}\s*\(")
    bound = re.compile(rf"\b(\w+)\s*=\s*(?:[\w.]+\.)?{word}\s*\(")

    def builds(text: str) -> bool:
        names = {m.group(1) for m in bound.finditer(text)}
        return bool(direct.search(text)) or any(
            re.search(start + re.escape(n) + r"\b", text) for n in names
        )

    return _scan(("layer", cls), path, (cls, _ENCODER), builds, depend)


_FOUND: Dict[tuple, Tuple[bool, Tuple[str, ...]]] = {}


def _scan(what: tuple, path: str, words: Tuple[str, ...], found_in, depend) -> bool:
    """Whether ``found_in(text)`` holds for some ``.py`` file of the project
    of ``path`` that holds every one of ``words`` (once per process per root
    and ``what``); ``depend`` is told the file it holds for, else every file
    that holds the words."""
    key = (project_root(path),) + what
    if key not in _FOUND:
        found, naming = False, []
        for file in python_files(key[0]) or ():
            try:
                text = read_regular(file, MAX_BYTES).decode("utf-8", "replace")
            except OSError:
                continue
            if not all(w in text for w in words):
                continue
            naming.append(file)
            if found_in(text):
                found, naming = True, [file]
                break
        if len(_FOUND) > 256:
            _FOUND.clear()
        _FOUND[key] = (found, tuple(naming))
    found, files = _FOUND[key]
    for file in files if depend is not None else ():
        depend(file)
    return found
