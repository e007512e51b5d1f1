"""Issue 26, item 1 ("a call is a call"): a method other than ``forward``
of a module the caller holds (``self.head.encode(src)``) is a call of that
method, for the layout its callers feed it (review 21's sstr: a
``nn.Transformer`` driven only through its holder's ``encode`` and
``decode``, fed sequence-first data, was reported MHA001)."""

from __future__ import annotations

from flake8_mha.lint.engine import analyze_source

SOURCE = """\
import torch
from torch import nn


class StructureHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq2seq = nn.Transformer(d_model=64, nhead=4)
        self.emb = nn.Embedding(100, 64)

    def encode(self, src):
        return self.seq2seq.encoder(src)

    def decode(self, tgt, memory):
        return self.seq2seq.decoder(self.emb(tgt), memory)


class Predictor(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = StructureHead().eval()

    def forward(self, ids, peaks):
        hint = torch.tensor(ids).unsqueeze(1)  # (L, N)
        src = peaks.unsqueeze(1)  # (S, N, E)
        memory = self.head.encode(src)
        return self.head.decode(hint, memory)
"""


def test_the_holders_methods_are_fed_sequence_first_data(tmp_path):
    path = str(tmp_path / "head.py")
    assert analyze_source(SOURCE, path, ["MHA001"]) == []
    (got,) = analyze_source(SOURCE, path, ["MHA903"])
    assert (got.line, got.col) == (8, 24)
    assert (
        "fed sequence-first data on every call ((L, N, E), line 25: `# (S, N, E)`)" in got.message
    )


def test_the_same_methods_fed_batch_first_data(tmp_path):
    batch_first = SOURCE.replace(
        "peaks.unsqueeze(1)  # (S, N, E)", "peaks.unsqueeze(0)  # (N, S, E)"
    )
    (got,) = analyze_source(batch_first, str(tmp_path / "head.py"), ["MHA001"])
    assert (got.line, got.col) == (8, 24)
    assert "is fed batch-first data ((N, L, E), line 25: `# (N, S, E)`)" in got.message


def test_a_method_of_two_classes_the_attribute_may_hold_is_not_followed(tmp_path):
    """``self.head`` built from one of two classes on a branch: which
    ``encode`` runs is unknown, and the data stays unknown (MHA001 as before)."""
    two = (
        SOURCE.replace(
            "        self.head = StructureHead().eval()\n",
            "        self.head = StructureHead() if ids else OtherHead()\n",
        )
        .replace(
            "class Predictor(nn.Module):\n",
            "class OtherHead(StructureHead):\n"
            "    def encode(self, src):\n"
            "        return self.seq2seq.encoder(src.transpose(0, 1))\n\n\n"
            "class Predictor(nn.Module):\n",
        )
        .replace(
            "    def __init__(self):\n        super().__init__()\n        self.head",
            "    def __init__(self, ids=True):\n        super().__init__()\n        self.head",
        )
    )
    got = analyze_source(two, str(tmp_path / "head.py"), ["MHA001"])
    assert [(f.line, f.col) for f in got] == [(8, 24)]


SELF_CALL = """\
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, h)

    def forward(self, src):
        return src + self.self_attn(src, src, src, need_weights=False)[0]

    def training_step(self, batch):
        d, _ = batch
        window = d.permute(1, 0, 2)
        return self(window)
"""


def test_self_called_in_another_method_runs_forward(tmp_path):
    """Review 22's gputranad (TranAD under Lightning): ``self(window)`` in
    ``training_step`` is a call of ``forward``, so the window swapped to
    sequence-first right before it is what the module reads (it was MHA001;
    the method was also left out of the parse, naming no attention word)."""
    path = str(tmp_path / "lit.py")
    assert analyze_source(SELF_CALL, path, ["MHA001"]) == []
    (got,) = analyze_source(SELF_CALL, path, ["MHA903"])
    assert (got.line, got.col) == (7, 26)
    assert "((L, N, ?), line 14: `d.permute(1, 0, 2)`)" in got.message


SPLAT = """\
import torch.nn as nn


class TranAD(nn.Module):
    def __init__(self, d):
        super().__init__()
        dec = nn.TransformerDecoderLayer(d_model=d, nhead=2, dim_feedforward=16, batch_first=True)
        self.decoder = nn.TransformerDecoder(dec, 1)

    def encode(self, src, tgt):
        return tgt, src

    def forward(self, src, tgt):
        W, B, F = src.shape
        return self.decoder(*self.encode(src, tgt))
"""


def test_a_module_given_its_inputs_by_a_splat_of_a_methods_tuple(tmp_path):
    """Probe V's B13 (TranAD): ``self.decoder(*self.encode(src, tgt))`` feeds
    the decoder the elements of ``encode``'s tuple: its memory is ``src``,
    stated (S, N, E) by ``W, B, F = src.shape``."""
    (got,) = analyze_source(SPLAT, str(tmp_path / "tranad.py"), ["MHA010"])
    assert (got.line, got.col) == (15, 16)
    assert "fed sequence-first data ((S, N, E), line 14: `W, B, F = src.shape`)" in got.message
