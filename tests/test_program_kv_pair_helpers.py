"""Issue 26, item 2 (MHA015 through a summary): keys and values masked by a
helper of the wrapper's file that returns both (``k, v = mask_kv(k, v,
keep)``), as Flamingo's Perceiver resampler does.

``fixtures/program_calls/kv_pair_helpers``: the keep-mask the model builds
from lengths reaches the keys and values through the resampler's helper,
and SDPA is given no mask: MHA015 at the model's call, per file, over the
package and through ``check``; the resampler that masks the scores is
silent."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, package_texts

from flake8_mha.analysis.program.summaries import summarise
from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = pathlib.Path("fixtures/program_calls/kv_pair_helpers")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("model.py", 19, 16, "MHA015")])


def test_the_finding_names_the_mask_and_the_sdpa_call():
    (got,) = analyze_file(str(PKG / "model.py"), ["MHA015"])
    assert (got.line, got.col) == (19, 16)
    assert got.message.startswith("mask from line 17 (lengths_to_keep() -> ")
    assert "is a keep-mask applied to the keys and values" in got.message
    assert got.message.endswith(
        f"the call reaches scaled_dot_product_attention's keys and values at "
        f"{PKG / 'resampler.py'}:29 through PerceiverAttention.forward()"
    )


def _package(tmp_path, helper: str) -> pathlib.Path:
    texts = package_texts(PKG)
    texts["resampler.py"] = texts["resampler.py"].replace("    return k * m, v * m\n", helper)
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path / "model.py"


def test_a_helper_that_masks_the_keys_alone(tmp_path):
    model = _package(tmp_path, "    return k * m, v\n")
    got = analyze_file(str(model), ["MHA015"])
    assert [(f.line, f.col) for f in got] == [(19, 16)]
    assert "applied to the keys instead of" in got[0].message


def test_a_helper_that_masks_nothing_is_silent(tmp_path):
    assert analyze_file(str(_package(tmp_path, "    return k, v\n")), ["MHA015"]) == []


def test_a_helper_that_masks_with_what_no_parameter_gives_is_silent(tmp_path):
    helper = "    return k * k.new_ones(1), v * v.new_ones(1)\n"
    assert analyze_file(str(_package(tmp_path, helper)), ["MHA015"]) == []


def test_an_edit_to_the_helper_is_seen_by_a_summary_made_again():
    """An editor's re-lint keeps each unchanged definition's summary: the
    wrapper's is made again when the helper it reads changes."""
    text = (PKG / "resampler.py").read_text(encoding="utf-8")
    edited = text.replace("    return k * m, v * m\n", "    return k, v\n")
    summarise(text, reuse=True)
    got = summarise(edited, reuse=True)
    assert got == summarise(edited)
    assert "PerceiverAttention.forward" not in got
    assert "PerceiverAttention.forward" in summarise(text)


def test_the_same_program_in_one_file(tmp_path):
    texts = package_texts(PKG)
    one = "\n\n".join([texts["masks.py"], texts["resampler.py"], texts["model.py"]])
    one = one.replace("from .masks import lengths_to_keep\n", "")
    one = one.replace("from .resampler import MaskedPerceiverAttention, PerceiverAttention\n", "")
    path = tmp_path / "one.py"
    path.write_text(one, encoding="utf-8")
    line = (
        one.splitlines().index("        return self.attn(patches, latents, keep)  # MHA015:16") + 1
    )
    got = analyze_source(one, str(path), ["MHA015"])
    assert [(f.line, f.col, f.code) for f in got] == [(line, 16, "MHA015")]
