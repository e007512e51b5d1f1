"""Issue 26: mask builders of another file that transform the mask they are passed.

``fixtures/program_calls/mask_transforms``: ``invert(mask)``,
``for_heads(mask, heads)`` and ``additive(keep, dtype)`` live in masks.py;
model.py passes them its own masks.  Each call is judged with the caller's
mask bound to the builder's parameter, as a helper of the caller's own file
is: an inverted keep mask and an ignore mask expanded over heads reach SDPA
(MHA002); the inverted ignore mask, the expanded keep mask and the additive
mask are correct."""
from __future__ import annotations


import pytest

from flake8_mha.lint import engine

from fixture_expect import (
    FIXTURES, assert_package_messages, check_rows, copied, engine_rows,
)

PKG = FIXTURES / "program_calls" / "mask_transforms"
REL = "fixtures/program_calls/mask_transforms/"
TAIL = "means True = ignore; scaled_dot_product_attention treats True as attend (invert it: ~mask)"
MESSAGES = {
    ("model.py", 9, 12, "MHA002"): f"mask from line 9 (invert() -> {REL}masks.py:9: ~mask) {TAIL}",
    ("model.py", 19, 12, "MHA002"): f"mask from line 18 (tokens == pad_id) {TAIL}",
    # static and class methods of converter.py's class, called through the class
    ("encoder.py", 9, 12, "MHA002"):
        f"mask from line 9 (MaskConverter.invert() -> {REL}converter.py:9: ~mask) {TAIL}",
    ("encoder.py", 13, 12, "MHA002"): f"mask from line 13 (MaskConverter.padding() -> "
                                      f"{REL}converter.py:14: input_ids == pad_id) {TAIL}",
}


def test_flake8_over_the_package_and_on_each_file_alone():
    assert_package_messages(PKG, MESSAGES)


def test_the_same_builders_in_the_callers_file_give_the_same_findings(tmp_path):
    # one file: masks.py's functions above model.py's (its imports dropped)
    masks = (PKG / "masks.py").read_text().splitlines()
    model = (PKG / "model.py").read_text().splitlines()
    body = [line for line in model if not line.startswith("from .masks")]
    (tmp_path / "one.py").write_text("\n".join(masks + [""] + body) + "\n")
    moved = len(masks) + 1 - 1  # every model.py line moves down by masks.py's lines, one import gone
    assert engine_rows(tmp_path / "one.py") == [(line + moved, col, code)
                                          for (name, line, col, code) in sorted(MESSAGES)
                                          if name == "model.py"]


@pytest.mark.parametrize("change, found", [
    # the builder no longer inverts: the keep mask reaches SDPA as it is, the ignore one too
    (("    return ~mask\n", "    return mask\n"), [(14, 12, "MHA002"), (19, 12, "MHA002")]),
    # the builder inverts what it expands: the ignore mask becomes a keep mask, the keep one an ignore one
    (("    return mask[:, None, None, :]", "    return ~mask[:, None, None, :]"),
     [(9, 12, "MHA002"), (24, 12, "MHA002")]),
    # a builder whose result the analysis cannot tell: nothing is said of its calls
    (("    return ~mask\n", "    return mask.flip(0)\n"), [(19, 12, "MHA002")]),
])
def test_an_edit_of_a_builder_changes_its_callers_findings(tmp_path, change, found):
    pkg = copied(PKG, tmp_path)
    masks = pkg / "masks.py"
    text = masks.read_text()
    assert change[0] in text
    masks.write_text(text.replace(change[0], change[1]))
    assert engine_rows(pkg / "model.py") == found


def test_an_edit_of_a_builder_invalidates_the_cached_finding(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    pkg = copied(PKG, tmp_path)

    def run():
        return check_rows("mask_transforms/model.py", capsys)

    first = run()
    assert first == (1, [(9, "MHA002"), (19, "MHA002")])
    assert run() == first  # from the cache
    masks = pkg / "masks.py"
    masks.write_text(masks.read_text().replace("    return ~mask\n", "    return mask\n"))
    assert run() == (1, [(14, "MHA002"), (19, "MHA002")])


def test_static_and_class_methods_called_through_their_class_in_one_file():
    converter = (PKG / "converter.py").read_text()
    body = (PKG / "encoder.py").read_text().replace("from .converter import MaskConverter\n", "")
    text = converter + "\n\n" + body
    found = engine.analyze_source(text, "one.py", project=False)
    shift = len(converter.splitlines()) + 1  # encoder.py's lines, below converter.py's, one line gone
    assert [(f.line, f.col, f.code) for f in found] == [(9 + shift, 12, "MHA002"),
                                                        (13 + shift, 12, "MHA002")]


def test_a_plain_method_called_through_its_class_is_not_read(tmp_path):
    # ``MaskConverter.keep(ids, pad_id)`` would bind ids to ``self``: nothing is said of it
    pkg = copied(PKG, tmp_path)
    encoder = pkg / "encoder.py"
    text = encoder.read_text()
    encoder.write_text(text.replace("MaskConverter.invert(MaskConverter.padding(tokens, pad_id))",
                                    "~MaskConverter.keep(tokens, pad_id)"))
    assert engine_rows(encoder) == [(9, 12, "MHA002"), (13, 12, "MHA002")]
