"""Two chains across files that probe L found missed
(``fixtures/program_calls/float_masks/``, ``fixtures/program_calls/super_forward/``):
a module that makes its mask parameter 0/1 floats before SDPA (``keep.float()``),
handed a bool mask by another file, and a subclass of ``nn.MultiheadAttention``
whose ``forward`` hands its mask to ``super().forward(...)``, called from
another file with a float keep-mask.  Each is judged at the call that hands
the mask in, with the chain named, over the package, one file at a time and
through ``check``; a correct sibling stays silent."""

from __future__ import annotations

import ast

from fixture_expect import assert_package_runs
from flake8_mha.analysis.program import steps
from flake8_mha.analysis.program.summaries import summarise

FLOAT = "fixtures/program_calls/float_masks"
SUPER = "fixtures/program_calls/super_forward"


def test_a_bool_mask_made_floats_by_the_callee_is_judged_at_the_call():
    found = assert_package_runs(FLOAT, [("model.py", 22, 20, "MHA004")], select="MHA0,MHA1")
    assert found[0].msg.startswith("mask from this call, as the callee uses it ((~pad)[:, None, None, :].float())")
    assert "float_masks/attention.py:19 through CrossAttention.forward()" in found[0].msg


def test_a_float_cast_is_a_step_of_the_summary():
    got = steps.reach(ast.parse("m[:, None].to(torch.float16)", mode="eval").body, {"m"}, {}, 0)
    assert got == {"param": "m", "ops": [["index", ":, None"], ["cast", "half"]]}
    with open(f"{FLOAT}/attention.py", encoding="utf-8") as fh:
        table = summarise(fh.read())
    assert table["CrossAttention.forward"]["reach"]["attn_mask"] == {
        "param": "memory_padding_mask",
        "ops": [["invert"], ["index", ":, None, None, :"], ["cast", "float"]],
    }


def test_super_forward_of_a_torch_subclass_is_followed_from_another_file():
    found = assert_package_runs(
        SUPER, [("classifier.py", 23, 16, "MHA003"), ("classifier.py", 23, 16, "MHA004")],
        select="MHA0,MHA1",
    )
    assert all("through MaskedSelfAttention.forward()" in f.msg for f in found)
    with open(f"{SUPER}/modules.py", encoding="utf-8") as fh:
        table = summarise(fh.read())
    assert table["BatchFirstSelfAttention.forward"]["reach"] == {
        "MultiheadAttention.key_padding_mask": {"param": "padding_mask", "ops": []}
    }
