"""Misses of probe X and later probes, and release reviews' false findings
mended in the thirtieth stop, each a package of several files run through
flake8 per file, over the package and through ``check``."""

from __future__ import annotations

from fixture_expect import assert_package_runs, flake8_in_project, flake8_run, write_package
from flake8_mha.lint.engine import analyze_source


def test_a_padding_a_helper_widens_and_tiles_head_major_is_per_sample():
    # ``pair_mask(revisit_padding(...), HEADS)``: the helper expands an (N, S)
    # padding to (N, S, S) and repeats it head-major; the padding differs per sample
    assert_package_runs(
        "fixtures/program_calls/padding_pairs", [("model.py", 22, 17, "MHA016")], select="MHA"
    )


def test_values_zeroed_in_place_before_sdpa():
    # ``v.masked_fill_(~keep, 0.0)`` under ``if mask is not None:``, then SDPA
    # with no mask: judged at the call that hands the keep-mask in
    assert_package_runs(
        "fixtures/program_calls/kv_in_place", [("model.py", 19, 13, "MHA015")], select="MHA"
    )


def test_a_key_zeroed_in_place_in_the_function_that_makes_the_mask():
    src = (
        "import torch.nn.functional as F\n"
        "def run(tokens, q, k, v, pad_id=0):\n"
        "    keep = (tokens != pad_id)[:, None, :, None]\n"
        "    v.masked_fill_(~keep, 0.0)\n"
        "    return F.scaled_dot_product_attention(q, k, v)\n"
        "def after(tokens, q, k, v, pad_id=0):\n"
        "    out = F.scaled_dot_product_attention(q, k, v)\n"
        "    v.masked_fill_((tokens == pad_id)[:, None, :, None], 0.0)\n"
        "    return out\n"
    )
    found = analyze_source(src, "a.py", ["MHA015"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA015", 5, 12)]


def test_a_count_named_n_of_things_against_an_arange_is_a_length():
    # ``days[None, :] < n_days[:, None]`` in masks.py, the keep-mask handed as
    # src_key_padding_mask in model.py (probe Y's Y02)
    assert_package_runs(
        "fixtures/program_calls/count_masks", [("model.py", 18, 13, "MHA003")], select="MHA"
    )


def test_keys_zeroed_by_a_helper_of_another_file_with_a_parameter_named_keep():
    # ``k = zero_pad(self.k(x), keep)`` (utils.py: ``x * keep[..., None]``) in
    # hand-written attention that never masks its scores (probe Y's Y11, X's X05)
    assert_package_runs(
        "fixtures/program_calls/kv_keep_helpers",
        [("attention.py", 18, 13, "MHA015"), ("attention.py", 19, 13, "MHA015")],
        select="MHA",
    )


def test_a_rate_or_a_count_named_keep_is_no_mask():
    src = (
        "import torch\n"
        "def attend(q, k, v, keep_prob, keep_count):\n"
        "    k = k * keep_prob\n"
        "    v = v * keep_count\n"
        "    return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v\n"
    )
    assert analyze_source(src, "a.py", ["MHA015"]) == []


def test_a_partial_of_a_held_decoder_kept_on_self():
    # ``self._decode = partial(self.decoder, tgt_is_causal=True)``, then
    # ``self._decode(tgt, memory)`` without tgt_mask (probe Y's Y26)
    src = open("fixtures/MHA005_partial_decoder.py", encoding="utf-8").read()
    found = analyze_source(src, "fixtures/MHA005_partial_decoder.py", ["MHA005"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA005", 19, 16)]


def test_the_message_names_the_callee_the_reported_mask_reaches(tmp_path):
    # a block hands one mask to a self-attention that inverts it (first) and
    # another to a cross-attention that does not: the finding names the second
    pkg = write_package(
        tmp_path / "pkg",
        {
            "attention.py": "import torch.nn.functional as F\n\n\n"
            "def self_attend(x, pad):\n"
            "    return F.scaled_dot_product_attention(x, x, x, attn_mask=~pad[:, None, None, :])\n\n\n"
            "def cross_attend(x, text, text_mask):\n"
            "    return F.scaled_dot_product_attention(\n"
            "        x, text, text, attn_mask=text_mask[:, None, None, :]\n"
            "    )\n",
            "blocks.py": "from .attention import cross_attend, self_attend\n\n\n"
            "def block(x, vid_pad, text, text_mask):\n"
            "    x = x + self_attend(x, vid_pad)\n"
            "    return x + cross_attend(x, text, text_mask)\n",
            "model.py": "from .blocks import block\n\n\n"
            "def forward(x, vid_pad, text, instr_ids):\n"
            "    text_mask = instr_ids == 0\n"
            "    return block(x, vid_pad, text, text_mask)\n",
        },
    )
    status, found = flake8_run(str(pkg), select="MHA")
    assert status == 1
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.col, f.code) for f in found] == [
        ("model.py", 6, 12, "MHA002")
    ]
    assert found[0].msg.endswith(
        "the call reaches scaled_dot_product_attention at pkg/attention.py:9"
        " through block() -> cross_attend()"
    )


def test_a_term_added_through_a_helper_of_another_file():
    # ``scores = add_bias(scores, bias)`` (utils.py) in the attention, the bool
    # keep-mask made by the model (probe Y's Y20, probe Z's Z30)
    assert_package_runs(
        "fixtures/program_calls/added_helpers", [("model.py", 20, 13, "MHA004")], select="MHA"
    )


def test_an_edit_of_the_helper_changes_the_finding_with_the_cache_on(tmp_path):
    """flake8's results cache on: model.py and attention.py unchanged, the
    finding follows what the helper of utils.py does with the term."""
    import pathlib
    import shutil

    (tmp_path / "setup.cfg").write_text("[flake8]\n")
    shutil.copytree(pathlib.Path("fixtures/program_calls/added_helpers"), tmp_path / "pkg")

    def run():
        return flake8_in_project(tmp_path, "pkg/model.py", "MHA004")

    assert run() == (1, [["pkg/model.py:20:13:", "MHA004"]])
    assert (tmp_path / ".flake8-mha-cache").is_dir()
    utils = tmp_path / "pkg" / "utils.py"
    text = utils.read_text()
    utils.write_text(text.replace("scores + bias", "scores * bias"))  # a scale: no addition
    assert run() == (0, [])
    utils.write_text(text)
    assert run() == (1, [["pkg/model.py:20:13:", "MHA004"]])
