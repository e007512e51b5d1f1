"""Probe K (twenty-first stop): one report per defect along a chain of
calls, ``block.forward(...)`` over a loop's items, a wrapper's mask parameter
that another file hands a mask, and the line a message names when a chain
reaches SDPA beside an eager fill; exact code, line and column."""

from __future__ import annotations

import textwrap

from fixture_expect import write_package

from flake8_mha.lint.engine import analyze_source


def _found(src, codes, path="m.py"):
    found = analyze_source(textwrap.dedent(src), path, codes)
    return [(f.code, f.line, f.col) for f in found], found


CHAIN = """\
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x, mask):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        APPLY
        return OUT


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = Attn(d)

    def forward(self, x, mask):
        return x + self.attn(x, mask)


class Model(nn.Module):
    def __init__(self, d, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.emb = nn.Embedding(10, d)
        self.layers = nn.ModuleList([Layer(d) for _ in range(2)])

    def forward(self, tokens):
        mask = (tokens != self.pad_id)[:, None, :].float()
        x = self.emb(tokens)
        for layer in self.layers:
            x = CALL
        return x
"""

SCORES = (
    "scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)) * mask",
    "F.softmax(scores, dim=-1) @ v",
)
KEYS = (
    "keep = mask.transpose(1, 2).unsqueeze(1)",
    "F.scaled_dot_product_attention(q[:, None], k[:, None] * keep, v[:, None] * keep)[:, 0]",
)


def _chain(apply, call="layer(x, mask)"):
    src = CHAIN.replace("APPLY", apply[0]).replace("OUT", apply[1]).replace("CALL", call)
    return _found(src, ["MHA012", "MHA015"])[0]


def test_a_mask_multiplied_into_the_scores_two_calls_down_is_reported_once():
    assert _chain(SCORES) == [("MHA012", 38, 17)]


def test_the_forward_of_a_loops_item_is_the_call_of_it():
    assert _chain(SCORES, "layer.forward(x, mask)") == [("MHA012", 38, 17)]


def test_a_wrapper_the_project_hands_a_mask_is_judged_at_the_call(tmp_path):
    attention = (
        "import torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
        "class Attention(nn.Module):\n"
        "    def forward(self, q, k, v, mask):\n"
        "        keep = mask[:, None, :, None].to(k.dtype)\n"
        "        return F.scaled_dot_product_attention(q, k * keep, v * keep)\n\n\n"
        "class Cross(Attention):\n"
        "    pass\n"
    )
    model = (
        "import torch\nimport torch.nn as nn\n\nfrom .attention import Attention\n\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.attn = Attention()\n\n"
        "    def forward(self, q, k, v, lengths):\n"
        "        keep = torch.arange(k.shape[2])[None, :] < lengths[:, None]\n"
        "        return self.attn(q, k, v, keep)\n"
    )
    pkg = write_package(tmp_path / "pkg", {"attention.py": attention, "model.py": model})
    rows = {}
    for name in ("attention.py", "model.py"):
        path = pkg / name
        rows[name] = [
            (f.code, f.line, f.col) for f in analyze_source(path.read_text(), str(path), ["MHA015"])
        ]
    # the parameter's name says mask, but the project hands it one: judged at that call
    assert rows == {"attention.py": [], "model.py": [("MHA015", 14, 16)]}


def test_a_chain_to_sdpa_beside_an_eager_fill_names_the_sdpa_call(tmp_path):
    utils = (
        "import torch\nimport torch.nn.functional as F\n\n\n"
        "def eager(q, k, v, attention_mask):\n"
        "    w = torch.matmul(q, k.transpose(2, 3))\n"
        "    w = w + attention_mask\n"
        "    return torch.matmul(torch.softmax(w, dim=-1), v)\n\n\n"
        "def sdpa(q, k, v, attention_mask):\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask)\n\n\n"
        "def attend(q, k, v, attention_mask, eager_mode=False):\n"
        "    if eager_mode:\n"
        "        return eager(q, k, v, attention_mask)\n"
        "    return sdpa(q, k, v, attention_mask)\n"
    )
    model = (
        "from .utils import attend\n\n\n"
        "def run(q, k, v, ids):\n"
        "    keep = (ids != 0)[:, None, None, :].float()\n"
        "    return attend(q, k, v, keep)\n"
    )
    pkg = write_package(tmp_path / "pkg", {"utils.py": utils, "model.py": model})
    path = pkg / "model.py"
    found = analyze_source(path.read_text(), str(path), ["MHA004"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA004", 6, 12)]
    assert found[0].evidence["through"]["line"] == 12  # not the eager addition at 7
