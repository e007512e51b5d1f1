"""A mask a function multiplies into the keys or values of its SDPA call,
given by its callers (``fixtures/program_calls/kv_masks/``): the caller's
mask is judged at each call (MHA015), in the same file or another, over the
package, one file at a time and through ``check``; the SDPA call inside is
then not judged from the join of its callers."""

from __future__ import annotations

from fixture_expect import assert_package_runs, write_package
from flake8_mha.analysis.program.fills import KV
from flake8_mha.analysis.program.summaries import summarise
from flake8_mha.lint.engine import analyze_source

PACKAGE = "fixtures/program_calls/kv_masks"


def test_over_the_package_one_file_at_a_time_and_through_check():
    assert_package_runs(
        PACKAGE,
        [
            ("local.py", 15, 12, "MHA015"),
            ("model.py", 21, 16, "MHA015"),
            ("model.py", 30, 16, "MHA015"),
        ],
        select="MHA",
    )


def test_the_summary_says_what_the_parameter_is_multiplied_into():
    table = summarise(
        "import torch.nn.functional as F\n"
        "def attend(q, k, v, keep):\n"
        "    f = keep[:, None, :, None].float()\n"
        "    return F.scaled_dot_product_attention(q, k * f, v)\n"
        "def zeroed(q, k, v, pad):\n"
        "    k = k.masked_fill(pad[:, None, :, None], 0)\n"
        "    return F.scaled_dot_product_attention(q, k, v)\n"
        "def masked(q, k, v, keep, m):\n"
        "    return F.scaled_dot_product_attention(q, k * keep, v, attn_mask=m)\n"
    )
    # the value is the caller's own (MHA015's other direction: masked by the caller)
    assert table["attend"]["reach"] == {
        KV: {"param": "keep", "ops": [["index", ":, None, :, None"], [KV, "keys"]]},
        "value": {"param": "v", "ops": []},
    }
    assert table["zeroed"]["reach"][KV] == {
        "param": "pad",
        "ops": [["index", ":, None, :, None"], ["invert"], [KV, "keys"]],
    }
    # the scores are masked: zeroed keys change nothing the weights see
    assert KV not in table["masked"]["reach"]


def _run(tmp_path, caller: str):
    pkg = write_package(
        tmp_path / "pkg",
        {
            "attn.py": "import torch.nn.functional as F\n\n\n"
            "def attend(q, k, v, keep):\n"
            "    f = keep[:, None, :, None].to(k.dtype)\n"
            "    return F.scaled_dot_product_attention(q, k * f, v * f)\n\n\n"
            "def attend_keys(q, k, v, keep):\n"
            "    return F.scaled_dot_product_attention(q, k * keep[:, None, :, None], v)\n",
            "model.py": caller,
        },
    )
    model = pkg / "model.py"
    found = analyze_source(model.read_text(), str(model), ["MHA015"])
    return [(f.code, f.line, f.col) for f in found], found


def test_an_ignore_mask_or_a_gate_handed_in_is_not_this_rule(tmp_path):
    # padding True = ignore: the keys it zeroes are the real ones (another bug,
    # not a mask left on the padding); a learned gate: no mask at all
    got, _ = _run(
        tmp_path,
        "import torch\nfrom .attn import attend\n\n\n"
        "def run(q, k, v, tokens, w):\n"
        "    pad = tokens == 0\n"
        "    a = attend(q, k, v, pad)\n"
        "    return a + attend(q, k, v, torch.sigmoid(w))\n",
    )
    assert got == []


def test_a_keep_mask_handed_in_is_reported_at_the_call_naming_the_function(tmp_path):
    got, found = _run(
        tmp_path,
        "from .attn import attend, attend_keys\n\n\n"
        "def run(q, k, v, tokens):\n"
        "    keep = tokens != 0\n"
        "    return attend(q, k, v, keep) + attend_keys(q, k, v, keep)\n",
    )
    assert got == [("MHA015", 6, 12), ("MHA015", 6, 36)]
    assert "keys and values" in found[0].message
    assert "applied to the keys instead" in found[1].message
    assert "through attend()" in found[0].message
    assert found[0].evidence["through"]["params"] == {KV: "keep"}
