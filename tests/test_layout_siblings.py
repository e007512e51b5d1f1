"""Layouts that paths disagree on, swaps with a copy after them, and norms
built through a constructor parameter (issue 26):

- two callers of one module, one feeding what it reads and one the
  opposite layout: the wrong one is reported, naming its evidence (a
  correct sibling no longer hides it);
- ``x.transpose(0, 1).contiguous()`` right before the call is the swap;
- ``self.ln_1 = norm_layer(d)`` with ``norm_layer=nn.LayerNorm`` keeps the
  layout as ``nn.LayerNorm(d)`` does.

Each case checks the exact (code, line, column) and the evidence line."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from fixture_expect import ROOT, flake8_run
from flake8_mha.lint.engine import analyze_source

PACKAGE = "fixtures/program_layout/mixed_towers"
WANT = [("blocks.py", 14, 17, "MHA010"), ("pooled.py", 9, 21, "MHA001")]
HEAD = "import torch\nimport torch.nn as nn\n"  # lines 1-2


def _rows(found):
    return sorted((f.path.rsplit("/", 1)[1], f.line, f.col, f.code) for f in found)


def got(body: str, codes=("MHA001", "MHA010", "MHA903")):
    src = HEAD + textwrap.dedent(body)
    return sorted(
        (f.code, f.line, f.col, f.evidence.get("layout_line"))
        for f in analyze_source(src, "t.py", list(codes))
    )


def test_over_the_package_one_file_at_a_time_and_through_check():
    status, found = flake8_run(PACKAGE)
    assert (status, _rows(found)) == (1, WANT)
    messages = {f.code: f.msg for f in found}
    assert "video.py line 15: `frames.permute(1, 0, 2)`" in messages["MHA010"]
    assert "video.py line 20: `B, T, C = frames.shape`" in messages["MHA001"]
    for name, want in (("blocks.py", WANT[:1]), ("pooled.py", WANT[1:])):
        status, found = flake8_run(f"{PACKAGE}/{name}")
        assert (status, _rows(found)) == (1, want)
    for name in ("text.py", "video.py", "__init__.py"):
        assert flake8_run(f"{PACKAGE}/{name}") == (0, [])
    proc = subprocess.run(
        [sys.executable, "-m", "flake8_mha.frontends.cli", "check", "--no-cache", PACKAGE],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    out = sorted(line.split(" ", 2)[:2] for line in proc.stdout.splitlines() if ": MHA" in line)
    assert (proc.returncode, out) == (1, [[f"{PACKAGE}/{f}:{l}:{c}:", code] for f, l, c, code in WANT])


SIBLINGS = """\
class Mixer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, 8, batch_first={stated})

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.mix = Mixer(d)

    def tokens(self, x):
        B, L, E = x.shape
        return self.mix(x)

    def frames(self, x):
        B, L, E = x.shape
        return self.mix(x.transpose(0, 1))
"""


def test_a_correct_sibling_caller_does_not_hide_a_wrong_one():
    # batch-first module: the swapped caller (line 23) is wrong
    assert got(SIBLINGS.format(stated="True")) == [("MHA010", 9, 16, 23)]
    # sequence-first module: the caller that feeds its tokens as they are (line 18) is
    assert got(SIBLINGS.format(stated="False")) == [("MHA010", 9, 16, 18)]
    # left to the default: MHA001 names the batch-first caller
    assert got(SIBLINGS.replace(", batch_first={stated}", "")) == [("MHA001", 6, 21, 18)]
    # a batch_first the code does not state: unknown, neither reading is reported
    unknown = SIBLINGS.replace("batch_first={stated}", "batch_first=bf").replace(
        "def __init__(self, d):\n        super().__init__()\n        self.attn",
        "def __init__(self, d, bf=None):\n        super().__init__()\n        self.attn", 1)
    assert got(unknown) == []


def test_a_copy_after_the_swap_keeps_the_swap():
    assert got("""\
        class E(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.MultiheadAttention(256, 4)

            def forward(self, x):
                h = x.transpose(0, 1).contiguous()
                return self.a(h, h, h, need_weights=False)[0]
        """) == [("MHA903", 6, 18, 9)]


def test_a_norm_built_through_a_parameter_with_a_class_default_keeps_the_layout():
    assert got("""\
        class Block(nn.Module):
            def __init__(self, d, norm_layer=nn.LayerNorm):
                super().__init__()
                self.norm = norm_layer(d)
                self.attn = nn.MultiheadAttention(d, 8, batch_first=True)

            def forward(self, x):
                h = self.norm(x)
                return self.attn(h, h, h, need_weights=False)[0]


        block = Block(64)


        def run(feats):
            B, T, C = feats.shape
            return block(feats.permute(1, 0, 2))
        """) == [("MHA010", 11, 16, 19)]
