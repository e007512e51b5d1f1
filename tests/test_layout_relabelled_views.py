"""A ``view`` that names the batch at another axis than the data holds it
(review 24's mire2e: batch-first features viewed ``(-1, batch_size, F)``
instead of transposed): its sizes are no evidence of a sequence-first
layout, so the module is not called correct (MHA903) and MHA001 stands."""

from __future__ import annotations

import textwrap

from flake8_mha.lint.engine import analyze_source

HEAD = """\
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.feature_dim = 64
        layer = nn.TransformerEncoderLayer(d_model=64, nhead=4)
        self.enc = nn.TransformerEncoder(layer, num_layers=2)

    def forward(self, features):
        batch_size = features.size(0)
"""


def _found(body: str):
    src = HEAD + textwrap.indent(textwrap.dedent(body), "        ")
    return [(f.code, f.line, f.col) for f in analyze_source(src, "a.py", ["MHA001", "MHA903"])]


def test_batch_first_data_viewed_to_a_sequence_first_shape_is_no_swap():
    assert _found(
        """
        x = features.view(batch_size, -1, self.feature_dim)
        return self.enc(x.view(-1, batch_size, self.feature_dim))
        """
    ) == [("MHA001", 8, 17)]


def test_a_transpose_or_a_view_that_keeps_the_batch_axis_is_read_as_before():
    assert _found(
        """
        x = features.view(batch_size, -1, self.feature_dim)
        return self.enc(x.transpose(0, 1))
        """
    ) == [("MHA903", 8, 17)]


def test_the_batch_read_from_axis_0_then_named_at_axis_1_is_a_relabel():
    # ``batch_size = features.size(0)`` says the batch is the first axis
    assert _found(
        """
        return self.enc(features.view(-1, batch_size, self.feature_dim))
        """
    ) == [("MHA001", 8, 17)]
