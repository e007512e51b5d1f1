"""Issue 26, item 1: calling an instance of a plain class is calling its
``__call__`` (diffusers' attention processors: ``self.processor(self,
hidden_states, attention_mask=mask)``), as calling a module is calling its
``forward``.

``fixtures/program_calls/processors``: the model feeds its attention layers
a padding mask; their processor hands it to SDPA, which reads True as
attend: MHA002 at the model's calls, per file, over the package and through
``check``, naming the chain; the inverted mask beside them is silent, and so
is the same program in one file with the right mask."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, package_texts

from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = pathlib.Path("fixtures/program_calls/processors")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("model.py", 18, 17, "MHA002"), ("model.py", 19, 20, "MHA002")])


def test_the_findings_name_the_chain():
    got = analyze_file(str(PKG / "model.py"), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in got] == [(18, 17, "MHA002"), (19, 20, "MHA002")]
    assert "through Attention.forward() -> AttnProcessor.__call__()" in got[0].message
    assert "through JointAttention.forward() -> AttnProcessor.__call__()" in got[1].message


def _one_file():
    texts = package_texts(PKG)
    one = "\n\n".join([texts["processors.py"], texts["attention.py"], texts["model.py"]])
    one = one.replace("from .processors import AttnProcessor\n", "")
    return one.replace("from .attention import Attention, JointAttention\n", "")


def test_the_same_program_in_one_file(tmp_path):
    one = _one_file()
    path = tmp_path / "one.py"
    path.write_text(one, encoding="utf-8")
    got = analyze_source(one, str(path), ["MHA002"])
    lines = one.splitlines()
    first = lines.index("        x = x + self.attn(x, attention_mask=pad)  # MHA002:17") + 1
    second = lines.index("        return x + self.joint(x, attention_mask=pad)  # MHA002:20") + 1
    assert [(f.line, f.col, f.code) for f in got] == [(first, 17, "MHA002"), (second, 20, "MHA002")]


def test_a_call_method_that_inverts_the_mask_turns_the_judgement(tmp_path):
    """``attn_mask=~attention_mask`` in ``__call__``: the padding mask is now
    right and the keep-mask wrong, each judged at its own call."""
    one = _one_file().replace("attn_mask=attention_mask)", "attn_mask=~attention_mask)")
    path = tmp_path / "one.py"
    path.write_text(one, encoding="utf-8")
    got = analyze_source(one, str(path), ["MHA002"])
    lines = one.splitlines()
    first = lines.index("        x = x + self.attn(x, attention_mask=keep)") + 1
    second = lines.index("        return x + self.joint(x, attention_mask=keep)") + 1
    assert [(f.line, f.col, f.code) for f in got] == [(first, 17, "MHA002"), (second, 20, "MHA002")]
