"""Hand-written attention that multiplies a parameter's keep-mask into its
keys and values (``fixtures/program_calls/kv_handwritten/``): the caller's
mask is judged at each call (MHA015), in the same file or across files, as
for a wrapper whose SDPA call takes the masked keys; the function's own
product is then not judged from the join of its callers."""

from __future__ import annotations

from fixture_expect import assert_package_runs
from flake8_mha.analysis.program.fills import KV
from flake8_mha.analysis.program.kv_scores import HANDWRITTEN
from flake8_mha.analysis.program.summaries import summarise
from flake8_mha.lint.engine import analyze_source

PACKAGE = "fixtures/program_calls/kv_handwritten"


def test_over_the_package_one_file_at_a_time_and_through_check():
    assert_package_runs(PACKAGE, [("model.py", 22, 20, "MHA015")], select="MHA")


_ATTEND = (
    "import math\n"
    "def attend(q, k, v, keep):\n"
    "    k = k * keep[..., None]\n"
    "    v = v * keep[..., None]\n"
    "    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
    "    return scores.softmax(dim=-1) @ v\n"
)


def test_the_summary_names_the_keys_and_values_of_the_scores():
    reach = summarise(_ATTEND)["attend"]["reach"]
    assert reach == {
        KV: {"param": "keep", "ops": [["index", "..., None"], [KV, "keys and values", HANDWRITTEN]]}
    }


def test_scores_masked_or_a_mask_multiplied_into_them_are_no_such_sink():
    filled = _ATTEND.replace(
        "    return scores",
        "    scores = scores.masked_fill(~keep[:, None, :], -1e9)\n    return scores",
    )
    added = _ATTEND.replace(
        "    return scores.softmax", "    scores = scores + bias\n    return scores.softmax"
    )
    added = added.replace("def attend(q, k, v, keep):", "def attend(q, k, v, keep, bias):")
    for source in (filled, added):
        got = summarise(source).get("attend", {}).get("reach", {})
        assert KV not in got


def test_a_helper_that_moves_axes_keeps_the_rows_it_masks():
    source = (
        "import torch.nn as nn\n"
        "class Cross(nn.Module):\n"
        "    def split(self, x):\n"
        "        b, n, _ = x.shape\n"
        "        return x.view(b, n, 4, -1).transpose(1, 2)\n"
        "    def forward(self, text, image, image_keep):\n"
        "        k = image * image_keep[..., None]\n"
        "        q, k = self.split(text), self.split(k)\n"
        "        return (q @ k.transpose(-2, -1)).softmax(-1) @ self.split(image)\n"
    )
    reach = summarise(source)["Cross.forward"]["reach"]
    assert reach[KV]["param"] == "image_keep"
    assert reach[KV]["ops"][-1] == [KV, "keys", HANDWRITTEN]


def test_in_one_file_the_call_is_reported_once_not_the_product_too():
    source = (
        "import math\nimport torch\nimport torch.nn as nn\n\n\n"
        "class Cross(nn.Module):\n"
        "    def forward(self, q, k, v, keep):\n"
        "        k = k * keep[..., None]\n"
        "        v = v * keep[..., None]\n"
        "        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
        "        return scores.softmax(dim=-1) @ v\n\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.cross = Cross()\n\n"
        "    def forward(self, q, k, v, lengths):\n"
        "        keep = torch.arange(k.size(1))[None, :] < lengths[:, None]\n"
        "        return self.cross(q, k, v, keep)\n"
    )
    found = analyze_source(source, "one.py", ["MHA015"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA015", 21, 16)]
    assert "through Cross.forward()" in found[0].message
    assert "the keys and values of the attention at one.py:10" in found[0].message
