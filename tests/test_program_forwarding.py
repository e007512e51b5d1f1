"""Issue 26, item 2: a caller's mask is judged where it enters the chain,
once: not again at each call in between that only hands the parameter on
(a wrapper of a torch module, an addition of scores, stages named by
``setattr``/``getattr``), in one file and across files."""
from __future__ import annotations

import textwrap

from fixture_expect import write_package

from flake8_mha.lint.engine import analyze_file

WRAPPED = '''\
import torch.nn as nn


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(64, 8, batch_first=True)

    def forward(self, q, mask=None):
        return self.mha(q, q, q, key_padding_mask=mask, need_weights=False)[0]


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attn()

    def forward(self, x, mask=None):
        return x + self.attn(x, mask)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x, tokens):
        keep = tokens != 0
        return self.block(x, keep)
'''

ADDED = '''\
import torch
import torch.nn as nn


class Heads(nn.Module):
    def forward(self, q, k, v, mask=None):
        qk = q @ k.transpose(-1, -2)
        if mask is not None:
            qk = qk + mask
        return qk.softmax(-1) @ v


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = Heads()

    def forward(self, q, k, v, mask=None):
        return self.heads(q, k, v, mask)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, q, k, v):
        n = q.shape[-2]
        return self.block(q, k, v, mask=torch.ones(n, n, dtype=torch.bool).triu(1))
'''

STAGES = '''\
import torch.nn as nn
import torch.nn.functional as F


class Attn(nn.Module):
    def forward(self, x, mask=None):
        return F.scaled_dot_product_attention(x, x, x, attn_mask=mask)


class Stages(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.depth = depth
        for i in range(depth):
            setattr(self, f"stage_{i}", Attn())

    def forward(self, x, mask=None):
        for i in range(self.depth):
            x = getattr(self, f"stage_{i}")(x, mask=mask)
        return x
'''

STAGES_CALLER = '''\
import torch.nn as nn

from .stages import Stages


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = Stages(2)

    def forward(self, x, tokens):
        pad = (tokens == 0)[:, None, None, :]
        return self.stages(x, mask=pad)
'''


def _found(pkg, name, codes):
    return [(f.code, f.line, f.col) for f in analyze_file(str(pkg / name), codes)]


def test_a_wrapper_of_a_torch_module_in_between_is_not_reported(tmp_path):
    pkg = write_package(tmp_path / "a", {"m.py": WRAPPED})
    assert _found(pkg, "m.py", ["MHA003"]) == [("MHA003", 29, 16)]


def test_an_addition_of_scores_in_between_is_not_reported(tmp_path):
    pkg = write_package(tmp_path / "b", {"m.py": ADDED})
    assert _found(pkg, "m.py", ["MHA004"]) == [("MHA004", 29, 16)]


def test_stages_named_by_setattr_are_followed_in_one_file_and_across_files(tmp_path):
    one = write_package(tmp_path / "c", {
        "stages.py": STAGES + "\n\n" + textwrap.dedent(
            STAGES_CALLER.split("from .stages import Stages\n", 1)[1])})
    assert _found(one, "stages.py", ["MHA002"]) == [("MHA002", 32, 16)]
    two = write_package(tmp_path / "d", {"stages.py": STAGES, "model.py": STAGES_CALLER})
    assert _found(two, "model.py", ["MHA002"]) == [("MHA002", 13, 16)]
    assert _found(two, "stages.py", ["MHA002"]) == []
