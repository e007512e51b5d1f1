"""The forty-sixth stop.  Issue 26: a padding mask told by its name where the
code only tests pixels for zero, resampled to a feature map (probe AQ's
AQ24); a helper of another file that moves its argument's axes (probe AR's
AR03); a mask reshaped on some paths only, in a module of another file
(AR07)."""

from __future__ import annotations

from pathlib import Path

from fixture_expect import assert_package_runs, copied, write_package
from flake8_mha.lint.engine import analyze_file

PIXELS = Path("fixtures/program_calls/padded_pixels")
TOKENS = Path("fixtures/program_calls/token_helpers")
PATHS = Path("fixtures/program_calls/reshaped_on_some_paths")

SDPA = "F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, None, :])"


def _rows(found):
    return [(f.line, f.col, f.code) for f in found]


def _one_file(tmp_path, body: str, codes=("MHA002", "MHA003")):
    pkg = write_package(
        tmp_path / "pkg",
        {"m.py": "import torch\nimport torch.nn.functional as F\n\n\n" + body},
    )
    return _rows(analyze_file(str(pkg / "m.py"), list(codes)))


def test_padded_pixels_from_a_trunk_of_another_file_reach_sdpa_uninverted():
    found = assert_package_runs(str(PIXELS), [("model.py", 22, 16, "MHA002")])
    assert (
        f"mask from line 18 (self.trunk() -> {PIXELS}/backbone.py:19: "
        "(images == 0).all(dim=1), named pad) means True = ignore"
    ) in found[0].msg


def test_a_test_for_zeros_named_padding_is_an_ignore_mask(tmp_path):
    body = f"def f(q, k, v, x):\n    pad = x.abs().sum(-1) == 0\n    return {SDPA}\n"
    assert _one_file(tmp_path, body) == [(7, 12, "MHA002")]


def test_the_name_says_nothing_of_a_test_for_nonzero_or_of_an_amount(tmp_path):
    # ``!= 0`` marks what is there: a name saying padding contradicts it, so nothing is said
    body = f"def f(q, k, v, x):\n    pad = x.abs().sum(-1) != 0\n    return {SDPA}\n"
    assert _one_file(tmp_path, body) == []
    body = f"def f(q, k, v, x, pad_len):\n    pad = pad_len == 0\n    return {SDPA}\n"
    assert _one_file(tmp_path / "b", body) == []
    body = f"def f(q, k, v, x):\n    valid = (x == 0).all(-1)\n    pad = valid\n    return {SDPA}\n"
    assert _one_file(tmp_path / "c", body) == []


def test_a_resampled_mask_keeps_its_meaning(tmp_path):
    body = (
        "def f(q, k, v, ids, size):\n    pad = ids == 0\n"
        "    pad = F.interpolate(pad[:, None].float(), size=size).bool()[:, 0]\n"
        f"    return {SDPA}\n"
    )
    assert _one_file(tmp_path, body) == [(8, 12, "MHA002")]


def test_the_fixed_detector_is_silent(tmp_path):
    pkg = copied(PIXELS, tmp_path)
    model = pkg / "model.py"
    model.write_text(
        model.read_text().replace(
            "return self.reader(queries, tokens, pad.flatten(1))  # MHA002:16",
            "return self.reader(queries, tokens, ~pad.flatten(1))",
        )
    )
    assert _rows(analyze_file(str(model), ["MHA002", "MHA003"])) == []


def test_a_helper_of_another_file_that_moves_axes_is_read_at_the_call():
    found = assert_package_runs(str(TOKENS), [("model.py", 22, 18, "MHA010")])
    assert "sequence-first data ((L, N, C), line 22: `to_tokens(fmap)`)" in found[0].msg


def test_the_moved_axes_follow_what_the_helper_does(tmp_path):
    # the helper made batch-first: the batch-first encoder is right, the
    # sequence-first one is now fed batch-first tokens
    pkg = copied(TOKENS, tmp_path)
    tokens = pkg / "tokens.py"
    tokens.write_text(
        tokens.read_text().replace(
            "return fmap.flatten(2).permute(2, 0, 1)", "return fmap.flatten(2).permute(0, 2, 1)"
        )
    )
    assert _rows(analyze_file(str(pkg / "model.py"), ["MHA010", "MHA001"])) == [(41, 28, "MHA010")]


def test_a_mask_reshaped_on_some_paths_keeps_its_meaning_through_the_blocks():
    found = assert_package_runs(str(PATHS), [("policy.py", 17, 17, "MHA002")])
    tail = "through Block.forward() -> SelfAttention.forward()"
    assert found[0].msg.endswith(tail), found[0].msg


def test_a_rebinding_on_some_paths_that_is_no_reshape_leaves_the_mask_unknown(tmp_path):
    pkg = copied(PATHS, tmp_path)
    attention = pkg / "attention.py"
    attention.write_text(
        attention.read_text().replace("mask = mask[:, None]", "mask = mask[:, None].logical_not()")
    )
    assert _rows(analyze_file(str(pkg / "policy.py"), ["MHA002", "MHA003"])) == []


HEADS = Path("fixtures/program_calls/head_major_builders")


def test_mask_builders_of_another_file_that_tile_heads_first_are_reported_at_the_calls():
    found = assert_package_runs(
        str(HEADS), [("model.py", 20, 17, "MHA016"), ("model.py", 40, 22, "MHA016")]
    )
    assert found[0].msg.startswith(
        "`frame_mask(frame_valid, x.size(0) // frame_valid.size(0), HEADS)` repeats the mask "
        "head-major"
    )
    assert "`field_mask(missing, HEADS)` repeats the mask head-major" in found[1].msg


def test_a_builder_tiling_by_sample_is_silent(tmp_path):
    pkg = copied(HEADS, tmp_path)
    masks = pkg / "masks.py"
    masks.write_text(
        masks.read_text().replace(
            "return torch.cat([blocked] * num_heads, dim=0)",
            "return blocked.repeat_interleave(num_heads, dim=0)",
        )
    )
    assert _rows(analyze_file(str(pkg / "model.py"), ["MHA016"])) == [(20, 17, "MHA016")]


def test_a_mask_repeated_along_another_axis_is_no_sample_mask_any_more(tmp_path):
    # ``repeat_interleave`` over the keys: the rows are no longer one sample's each
    pkg = copied(HEADS, tmp_path)
    masks = pkg / "masks.py"
    masks.write_text(
        masks.read_text().replace(
            "blocked = blocked.repeat_interleave(n_patches, dim=0)  # (B * P, T, T), the tokens' order",
            "blocked = blocked.repeat_interleave(n_patches, dim=2)",
        )
    )
    assert _rows(analyze_file(str(pkg / "model.py"), ["MHA016"])) == [(40, 22, "MHA016")]


GUARDED = """import torch.nn as nn


class Mixer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads)

    def forward(self, x):
        {guard}
        return self.attn(x, x, x, need_weights=False)[0]
"""


def _guarded(tmp_path, guard: str):
    pkg = write_package(tmp_path / "pkg", {"mixer.py": GUARDED.replace("{guard}", guard)})
    return _rows(analyze_file(str(pkg / "mixer.py"), ["MHA001", "MHA903"]))


def test_a_shape_check_opening_forward_states_the_layout(tmp_path):
    guard = (
        "if len(x.shape) != 3:\n"
        '            raise ValueError(f"x must have shape (n_seq, n_batch, n_feats), not {x.shape}")'
    )
    assert _guarded(tmp_path, guard) == [(7, 21, "MHA903")]
    guard = 'assert x.dim() == 3, "x should be of shape (batch, seq_len, dim)"'
    assert _guarded(tmp_path / "b", guard) == [(7, 21, "MHA001")]


def test_a_check_that_states_no_shape_says_nothing(tmp_path):
    guard = 'assert x.dim() == 3, "x must be a 3-D tensor"'
    assert _guarded(tmp_path, guard) == [(7, 21, "MHA001")]


ONE_MINUS = """import torch.nn as nn


class CellEncoder(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        layer = nn.TransformerEncoderLayer(dim, heads, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)

    def forward(self, src, {param}):
        return self.encoder(src, src_key_padding_mask=({expr}))
"""


def _one_minus(tmp_path, param: str, expr: str):
    text = ONE_MINUS.replace("{param}", param).replace("{expr}", expr)
    pkg = write_package(tmp_path / "pkg", {"enc.py": text})
    return _rows(analyze_file(str(pkg / "enc.py"), ["MHA004"]))


def test_one_minus_a_mask_the_code_does_not_show_is_a_numeric_mask(tmp_path):
    # a bool mask cannot be subtracted from: ``1 - mask`` holds numbers (UCE, release review 46)
    assert _one_minus(tmp_path, "mask", "1 - mask") == [(11, 16, "MHA004")]
    assert _one_minus(tmp_path / "b", "alpha", "1 - alpha") == []
    assert _one_minus(tmp_path / "c", "mask", "~mask") == []


def test_keys_and_values_projected_from_masked_rows_are_still_masked_rows(tmp_path):
    # probe AR's AR05 in one function: the history zeroed, then projected into K and V
    pkg = write_package(tmp_path / "pkg", {"pool.py": PROJECTED})
    assert _rows(analyze_file(str(pkg / "pool.py"), ["MHA015"])) == [(24, 16, "MHA015")]


PROJECTED = """import torch
import torch.nn as nn
import torch.nn.functional as F

PAD = 0


class Pool(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.emb = nn.Embedding(100, d)
        self.q = nn.Linear(d, d)
        self.to_k = nn.Linear(d, d)
        self.w_v = nn.Parameter(torch.randn(d, d))

    def forward(self, tgt, ids):
        keep = ids != PAD
        hist = self.emb(ids) * keep.unsqueeze(-1)
        b, l, d = hist.shape
        q = self.q(tgt).view(b, 1, self.h, -1).transpose(1, 2)
        k = self.to_k(hist).view(b, l, self.h, -1).transpose(1, 2)
        v = (hist @ self.w_v).view(b, l, self.h, -1).transpose(1, 2)
        return F.scaled_dot_product_attention(q, k, v)

    def masked_scores_too(self, tgt, ids):
        keep = ids != PAD
        hist = self.emb(ids) * keep.unsqueeze(-1)
        b, l, d = hist.shape
        q = self.q(tgt).view(b, 1, self.h, -1).transpose(1, 2)
        k = self.to_k(hist).view(b, l, self.h, -1).transpose(1, 2)
        v = (hist @ self.w_v).view(b, l, self.h, -1).transpose(1, 2)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])
"""
