"""Issue 26, items 1 and 4: a factory of another file that returns an
``nn.ModuleList`` of torch attention modules (SASRec's
``build_attention_stack``, filled in a loop; a comprehension) makes each item
of the attribute that keeps it such a module, for the masks and for the
layout; items run as ``self.layers[i](...)`` and in ``for attn, norm in
zip(self.blocks, self.norms)``.  Probe P found the SASRec pattern reported
MHA001 (the data is swapped to sequence-first right before the call) and a
keep-mask from a helper (``log_seqs > 0``) missed.

``fixtures/program_calls/returned_lists``: MHA003 at the BERT4Rec call fed
the helper's keep-mask, per file, over the package and through ``check``;
the padding mask beside it is silent, and SASRec's stack gets no MHA001
(its opt-in MHA903 says it is right)."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, package_texts, write_package

from flake8_mha.lint.engine import analyze_file

PKG = pathlib.Path("fixtures/program_calls/returned_lists")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("model.py", 46, 17, "MHA003")], select="MHA0")


def test_the_stack_fed_its_swap_is_right():
    got = analyze_file(str(PKG / "modules.py"), ["MHA001", "MHA903"])
    assert [(f.line, f.col, f.code) for f in got] == [(7, 23, "MHA903")]
    assert "model.py line 20: `torch.transpose(seqs, 0, 1)`" in got[0].message


def test_the_helper_mask_names_its_line():
    got = analyze_file(str(PKG / "model.py"), ["MHA003"])
    assert [(f.line, f.col, f.code) for f in got] == [(46, 17, "MHA003")]
    assert "valid_item_mask() -> " in got[0].message and "data.py:7: log_seqs > 0" in got[0].message


def test_a_factory_of_two_kinds_makes_no_items(tmp_path):
    texts = package_texts(PKG)
    texts["modules.py"] = texts["modules.py"].replace(
        "        [nn.MultiheadAttention(hidden, heads, batch_first=True) for _ in range(num_blocks)]\n",
        "        [nn.MultiheadAttention(hidden, heads, batch_first=True), nn.Identity()]\n",
    )
    pkg = write_package(tmp_path / "pkg", texts)
    assert analyze_file(str(pkg / "model.py"), ["MHA003"]) == []


def test_a_name_that_holds_features_is_no_ids(tmp_path):
    texts = package_texts(PKG)
    texts["data.py"] = texts["data.py"].replace(
        "def valid_item_mask(log_seqs):\n    return log_seqs > 0",
        "def valid_item_mask(hidden_seqs):\n    return hidden_seqs > 0",
    )
    pkg = write_package(tmp_path / "pkg", texts)
    assert analyze_file(str(pkg / "model.py"), ["MHA003"]) == []
