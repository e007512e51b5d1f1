"""Issue 26 (probe T's B10): MHA015 by a mask's name is kept when the only
callers in the project hand on, bare, a parameter of their own; a keep-mask
a caller makes is judged at that call, also when the callee masks keys and
values in one tuple assignment (``k, v = k * m, v * m``).

``fixtures/program_calls/kv_passed_on``: the graph readout (its callers pass
``node_mask`` on) reports at its SDPA call; the token pool at the model's
call that builds the keep-mask; the readout that masks the scores is silent.
Per file, over the package and through ``check``."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, package_texts

from flake8_mha.lint.engine import analyze_file

PKG = pathlib.Path("fixtures/program_calls/kv_passed_on")
WANT = [("model.py", 38, 16, "MHA015"), ("readout.py", 25, 15, "MHA015")]


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), WANT)


def test_the_messages_name_the_mask_and_how_it_is_known():
    (by_name,) = analyze_file(str(PKG / "readout.py"), ["MHA015"])
    assert (by_name.line, by_name.col) == (25, 15)
    assert by_name.message.startswith(
        "`node_mask[:, :, None, None].to(h.dtype)`, a mask by its name, is applied to the keys"
    )
    (made,) = analyze_file(str(PKG / "model.py"), ["MHA015"])
    assert (made.line, made.col) == (38, 16)
    assert made.message.startswith("mask from line 38 (tokens != self.pad_id) is a keep-mask")
    assert made.message.endswith(
        f"keys and values at {PKG / 'pooling.py'}:25 through TokenPool.forward()"
    )


def _package(tmp_path, old: str, new: str) -> pathlib.Path:
    texts = package_texts(PKG)
    assert old in texts["model.py"]
    texts["model.py"] = texts["model.py"].replace(old, new)
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_a_caller_that_makes_the_mask_moves_the_finding_to_its_call(tmp_path):
    """A caller that builds the keep-mask is where the fact enters: the
    readout's SDPA call no longer reports by name, the caller does.  (A
    caller that passes an expression whose meaning is unknown silences the
    name too: docs/rules/MHA015.md, "Limits".)"""
    old = (
        "    def forward(self, feats, node_mask):\n"
        "        # node_mask: (B, N), 1.0 on real atoms, 0.0 on padding\n"
        "        return self.readout(self.embed(feats), node_mask)\n"
    )
    new = (
        "    def forward(self, feats, atom_ids):\n"
        "        # atom_ids: (B, N), 0 on padding\n"
        "        return self.readout(self.embed(feats), (atom_ids != 0).float())\n"
    )
    pkg = _package(tmp_path, old, new)
    assert analyze_file(str(pkg / "readout.py"), ["MHA015"]) == []
    got = analyze_file(str(pkg / "model.py"), ["MHA015"])
    assert [(f.line, f.col) for f in got] == [(17, 16), (38, 16)]
    assert got[0].message.startswith("mask from line 17 (atom_ids != 0) is a keep-mask")


def test_a_pool_that_masks_the_scores_is_silent(tmp_path):
    texts = package_texts(PKG)
    old = "        k, v = k * m, v * m\n        out = F.scaled_dot_product_attention(q, k, v)\n"
    new = (
        "        out = F.scaled_dot_product_attention(q, k, v, attn_mask=m.transpose(-1, -2) > 0)\n"
    )
    assert old in texts["pooling.py"]
    texts["pooling.py"] = texts["pooling.py"].replace(old, new)
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert analyze_file(str(tmp_path / "model.py"), ["MHA015"]) == []
    assert analyze_file(str(tmp_path / "pooling.py"), ["MHA015"]) == []
