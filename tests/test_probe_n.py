"""Probe N (twenty-fourth stop): blind hand-labelled multi-file packages.
What it found missed, each with its fixture or case: a mask handed to an
encoder that runs torch layers kept in an ``nn.ModuleList``/``ModuleDict``
in a loop (``layer_lists``); a config's power, a class method's ``cls(...)``
of a torch subclass, a ``partial`` of SDPA bound to a constant dropout
(``config_forms``); an optional score mask the call leaves None beside keys
zero-filled, and a mask reshaped by ``expand`` before SDPA
(``optional_masks``); a tiling helper of another file that imports no torch
(``tests/test_program_kv_helpers.py`` for the rest); and one false MHA903 on
a single utterance squeezed to 2-D."""

from __future__ import annotations

import textwrap
import time

from fixture_expect import assert_package_runs

from flake8_mha.lint.engine import analyze_source


def test_masks_through_layers_kept_in_lists():
    assert_package_runs(
        "fixtures/program_calls/layer_lists",
        [("model.py", 19, 13, "MHA003"), ("model.py", 20, 13, "MHA003")],
    )


def test_config_forms():
    assert_package_runs(
        "fixtures/program_calls/config_forms",
        [
            ("attn.py", 17, 16, "MHA007"),
            ("attn.py", 27, 16, "MHA007"),
            ("layers.py", 11, 16, "MHA101"),
            ("layers.py", 15, 12, "MHA008"),
        ],
    )


def test_optional_and_reshaped_masks():
    assert_package_runs(
        "fixtures/program_calls/optional_masks",
        [("net.py", 16, 16, "MHA015"), ("net.py", 24, 16, "MHA002")],
    )


def _found(src, codes, path="m.py"):
    return [(f.code, f.line, f.col) for f in analyze_source(textwrap.dedent(src), path, codes)]


def test_a_huge_power_is_unknown_not_computed():
    src = """\
    import torch.nn as nn
    HEADS = 2 ** 3
    WIDTH = 10 ** 10 ** 9
    m = nn.MultiheadAttention(WIDTH, HEADS, batch_first=True)
    n = nn.MultiheadAttention(100, HEADS, batch_first=True)
    """
    start = time.perf_counter()
    assert _found(src, ["MHA008"]) == [("MHA008", 5, 5)]
    assert time.perf_counter() - start < 30


SQUEEZED = """\
import torch.nn as nn


class FrameScorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(80, 64, 3, padding=1)
        self.attn = nn.MultiheadAttention(64, 4{bf})

    def forward(self, mel):
        feats = self.conv(mel.unsqueeze(0)).squeeze(0)
        frames = feats.transpose(0, 1)
        out, weights = self.attn(frames, frames, frames)
        return out, weights
"""


def test_one_utterance_squeezed_to_two_axes_has_no_batch():
    codes = ["MHA001", "MHA010", "MHA903"]
    assert _found(SQUEEZED.format(bf=""), codes) == []
    assert _found(SQUEEZED.format(bf=", batch_first=True"), codes) == []
    # not squeezed: the batch of one stays, rotated to (L, N, C): sequence-first
    batched = (
        SQUEEZED.format(bf="")
        .replace(".squeeze(0)", "")
        .replace("feats.transpose(0, 1)", "feats.permute(2, 0, 1)")
    )
    assert _found(batched, codes) == [("MHA903", 8, 21)]


def test_a_factory_handed_a_module_constant(tmp_path):
    # ``make_attend(ATTN_DROPOUT)``: the closure's dropout is the constant's value,
    # as a literal would be (probe M's closure factory)
    from flake8_mha.lint.engine import analyze_file

    pkg = tmp_path / "pk"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "fac.py").write_text(
        "import torch.nn.functional as F\n\n\n"
        "def make_attend(dropout=0.0):\n"
        "    def attend(q, k, v):\n"
        "        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout)\n\n"
        "    return attend\n"
    )
    block = (
        "from torch import nn\n\n"
        "from .fac import make_attend\n\n"
        "ATTN_DROPOUT = {value}\n\n\n"
        "class Block(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.attend = make_attend(ATTN_DROPOUT)\n\n"
        "    def forward(self, q, k, v):\n"
        "        return self.attend(q, k, v)\n"
    )
    for value, want in (("0.1", [(14, 16, "MHA007")]), ("0.0", [])):
        (pkg / "blk.py").write_text(block.format(value=value))
        got = analyze_file(str(pkg / "blk.py"), ["MHA007"])
        assert [(f.line, f.col, f.code) for f in got] == want
