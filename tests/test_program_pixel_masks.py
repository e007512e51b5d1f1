"""Probe T's B11 (RT-DETR): a keep-mask of each image's valid pixels, made
as a 2-D grid from per-sample (height, width) sizes (``ys[None, :, None] <
image_sizes[:, 0, None, None]``, the same for the columns, joined by ``&``)
in one file, flattened to the keys' axis by ``.flatten(1)`` and handed as
``key_padding_mask`` through a decoder layer of another file: MHA003 at the
head's call, per file, over the package and through ``check``; the head
that inverts it is silent."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs

from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = pathlib.Path("fixtures/program_calls/pixel_masks")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("model.py", 20, 16, "MHA003")])


def test_the_finding_names_the_grid_and_the_sink():
    (got,) = analyze_file(str(PKG / "model.py"), ["MHA003"])
    assert got.message.startswith(
        f"mask from line 18 (pixel_valid_mask() -> {PKG / 'masks.py'}:12: valid_h & valid_w)"
        " means True = keep; MultiheadAttention's key_padding_mask treats True as ignore"
    )


GRID = """\
import torch
import torch.nn.functional as F


def attend(q, k, v, lengths, height, width):
    ys = torch.arange(height)
    inside = ys[None, :, None] < lengths[:, None, None]
    keep = inside.expand(-1, -1, width).flatten(1)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])
"""


def test_a_grid_of_rows_flattened_in_one_function(tmp_path):
    path = str(tmp_path / "grid.py")
    assert analyze_source(GRID, path, ["MHA002", "MHA003"]) == []
    (got,) = analyze_source(GRID.replace("=keep", "=~keep"), path, ["MHA002", "MHA003"])
    assert (got.line, got.col, got.code) == (9, 12, "MHA002")
    assert "line 7: ys[None, :, None] < lengths[:, None, None]" in str(got.evidence)


def test_sizes_not_indexed_by_a_column_are_no_lengths(tmp_path):
    """``image_sizes[:, None, None]`` (a whole (h, w) row) is not a length."""
    text = GRID.replace("lengths[:, None, None]", "image_sizes[:, None, None]").replace(
        "lengths,", "image_sizes,"
    )
    assert analyze_source(text.replace("=keep", "=~keep"), str(tmp_path / "g.py"), ["MHA002"]) == []


COLUMNS = """\
import torch
import torch.nn as nn


class LineDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerDecoderLayer(16, 4, 32, batch_first=True)
        self.dec = nn.TransformerDecoder(layer, 1)

    def forward(self, x, memory, widths):
        cols = torch.arange(memory.size(1), device=memory.device)[None, :]
        memory_pad = (cols < widths[:, None]).float()  # 1.0 on valid image columns
        return self.dec(x, memory, memory_key_padding_mask=memory_pad)
"""


def test_a_text_lines_valid_columns_by_its_widths(tmp_path):
    """Probe V's B04 (an OCR decoder): per-sample ``widths`` count the valid
    columns of a padded line image, as ``lengths`` count tokens."""
    got = analyze_source(COLUMNS, str(tmp_path / "ocr.py"), ["MHA003", "MHA004"])
    assert [(f.line, f.col, f.code) for f in got] == [(14, 16, "MHA003"), (14, 16, "MHA004")]
    assert got[0].message.startswith("mask from line 13 (cols < widths[:, None]) means 1 = keep")
