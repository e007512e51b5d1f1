"""The thirty-seventh stop.  Issue 26: release review 37's misses (NaViT's
packed-image mask, litgpt's soft-capped scores) and probe AK's (a sample's
``n_layers``, a local named as a ModuleList attribute, ``torch.where`` on the
keys in another file, a loop over a ModuleList of several classes), each
through flake8 per file, over the package and ``check``.  Issue 30: the
summaries' text screen and their table of what reaches a sink."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, copied, source_rows as _rows, write_package
from flake8_mha.analysis.program import import_lines
from flake8_mha.analysis.program.summaries import REGISTRIES, summarise
from flake8_mha.lint.engine import analyze_file

PACKED = pathlib.Path("fixtures/program_calls/packed_segments")
DEFAULTS = pathlib.Path("fixtures/program_calls/default_masks")
MIXERS = pathlib.Path("fixtures/program_calls/mixer_loops")


# ------------------------------------------------------------------ the packages


def test_a_padding_mask_joined_to_same_image_pairs_and_inverted_by_the_block():
    # NaViT: ``same_image & key_pad_mask`` (True on the padding), filled with
    # ``~attn_mask`` two calls down, beside the block's other fill of ``mask``;
    # ``arange`` a ``partial(torch.arange, device=...)``; the fixed and the
    # padding-only forwards are silent
    found = assert_package_runs(
        str(PACKED),
        [
            ("model.py", 27, 16, "MHA003"),
            ("model.py", 52, 12, "MHA003"),
        ],
    )
    messages = {(f.line, f.code): f.msg for f in found}
    assert "joined by & and inverted by the function it is given to" in messages[(27, "MHA003")]
    assert "(make that part a keep-mask before the &)" in messages[(27, "MHA003")]
    assert "inverted by the ~ at line 52" in messages[(52, "MHA003")]
    assert "through Transformer.forward() -> Attention.forward()" in messages[(27, "MHA003")]


def test_a_bool_mask_added_on_the_soft_capped_path_beside_sdpa():
    # litgpt: the one mask parameter reaches SDPA (right for a bool keep-mask)
    # and, on the soft-capped path a flag picks, ``scores + mask`` (wrong);
    # the callee's ``if mask is None: mask = <bias>`` default does not hide it
    found = assert_package_runs(
        str(DEFAULTS),
        [
            ("model.py", 23, 16, "MHA004"),
            ("model.py", 32, 12, "MHA004"),
        ],
    )
    assert all("scores + mask at" in f.msg and "attention.py:36" in f.msg for f in found)


def test_a_loop_over_several_mixer_classes_and_a_local_named_as_the_container():
    # probe AK's AK13, AK14 (``torch.where(keep4, k, 0.0)`` in another file) and
    # AK12 (``zones`` a local and ``self.zones`` the ModuleList of blocks)
    assert_package_runs(
        str(MIXERS),
        [
            ("mixers.py", 68, 18, "MHA005"),
            ("model.py", 31, 21, "MHA012"),
            ("model.py", 31, 21, "MHA015"),
        ],
    )


def test_the_container_read_as_a_name_still_hides_its_calls(tmp_path):
    # the other side of AK12: ``zones`` itself read otherwise (handed on), the
    # calls of its items are not all the calls
    pkg = copied(MIXERS, tmp_path)
    model = pkg / "model.py"
    text = model.read_text()
    text = text.replace(
        "        z = self.embed(zones)\n",
        "        z = self.embed(zones)\n        keep_for_later(self.zones)\n",
    )
    text = text.replace(
        "def epoch_keep_mask(",
        "def keep_for_later(blocks):\n    return blocks\n\n\ndef epoch_keep_mask(",
    )
    model.write_text(text)
    assert [f.code for f in analyze_file(str(pkg / "mixers.py"))] == []


# ------------------------------------------------------------- the reductions, one file

PAIRS_FILLED = """\
import torch
from torch import nn


class Attention(nn.Module):
    def forward(self, q, k, v, mask=None, attn_mask=None):
        dots = torch.matmul(q, k.transpose(-1, -2))
        if mask is not None:
            dots = dots.masked_fill(~mask[:, None, None, :], -torch.finfo(dots.dtype).max)
        if attn_mask is not None:
            dots = dots.masked_fill(~attn_mask, -torch.finfo(dots.dtype).max)
        return torch.matmul(dots.softmax(dim=-1), v)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, q, k, v, lengths):
        keep = torch.arange(k.shape[-2])[None, :] < lengths[:, None]
        pad = torch.arange(k.shape[-2])[None, :] >= lengths[:, None]
        out = self.attn(q, k, v, mask=keep)
        return self.attn(out, k, v, attn_mask=pad[:, None, None, :])
"""


def test_two_fills_of_two_parameters_judge_each_caller_mask(tmp_path):
    # the padding mask right at one fill, an ignore-mask wrong at the other
    assert _rows(PAIRS_FILLED, ["MHA003"], tmp_path) == [(24, 16, "MHA003")]
    both_right = PAIRS_FILLED.replace(
        "attn_mask=pad[:, None, None, :]", "attn_mask=~pad[:, None, None, :]"
    )
    assert _rows(both_right, ["MHA003"], tmp_path) == []


DEFAULTED = """\
import torch
import torch.nn.functional as F


def build_mask_cache(n):
    return torch.tril(torch.ones((n, n), dtype=torch.bool)).unsqueeze(0).unsqueeze(0)


def attend(q, k, v, mask=None):
    scores = q @ k.mT * 0.125
    if mask is None:
        mask = torch.ones(q.size(2), q.size(2)).triu(diagonal=1)
        mask.masked_fill_(mask.bool(), torch.finfo(q.dtype).min)
    scores = scores + mask
    return F.softmax(scores, dim=-1) @ v


def forward(q, k, v):
    return attend(q, k, v, build_mask_cache(q.size(2)))
"""


def test_a_parameter_given_its_default_under_is_none_reads_the_caller_s_mask(tmp_path):
    # review 37's litgpt reduction: the fill in the default's block is no fill of scores
    assert _rows(DEFAULTED, ["MHA003", "MHA004"], tmp_path) == [(19, 12, "MHA004")]


KIND_GUARDED = """\
import torch
import torch.nn.functional as F


def attend(q, k, v, mask):
    if mask.dtype == torch.bool:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    scores = q @ k.transpose(-2, -1) + mask
    return scores.softmax(dim=-1) @ v


def forward(q, k, v, lengths):
    keep = torch.arange(k.shape[-2])[None, None, None, :] < lengths[:, None, None, None]
    return attend(q, k, v, keep)
"""


def test_paths_chosen_by_the_mask_s_own_kind_stay_joined(tmp_path):
    # a bool mask never reaches the addition here: the call is judged at SDPA,
    # where it is right (the addition's own reading, inside ``attend``, is the
    # in-function analysis's, as before this stop)
    assert (14, 12, "MHA004") not in _rows(KIND_GUARDED, ["MHA002", "MHA004"], tmp_path)
    flagged = KIND_GUARDED.replace(
        "def attend(q, k, v, mask):", "def attend(q, k, v, mask, eager=False):"
    ).replace("    if mask.dtype == torch.bool:", "    if not eager:")
    # a flag picks the path: the addition is judged at the call, where the mask enters
    assert _rows(flagged, ["MHA002", "MHA004"], tmp_path) == [(14, 12, "MHA004")]


def test_a_sample_s_count_of_layers_against_an_arange_is_a_keep_mask(tmp_path):
    # probe AK's AK09: layers recorded in a snow pit, one count per sample
    src = (
        "import torch\nimport torch.nn as nn\n\n\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        layer = nn.TransformerEncoderLayer(64, 4, batch_first=True)\n"
        "        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)\n\n"
        "    def forward(self, h, n_layers):\n"
        "        valid = torch.arange(h.shape[1])[None, :] < n_layers[:, None]\n"
        "        return self.enc(h, src_key_padding_mask=valid)\n"
    )
    assert _rows(src, ["MHA003"], tmp_path) == [(13, 16, "MHA003")]


# ---------------------------------------------------------------- issue 30: the screen


def test_prose_in_a_docstring_is_no_import():
    # torch's nn/functional.py: "from the border, ..." at a line's start
    assert not import_lines.imports_project_code(
        '"""\n    from the border, it\n"""\nimport torch\n'
    )
    assert import_lines.imports_project_code("from .import attention\n")
    assert import_lines.imports_project_code("from pkg \\\n    import attention\n")
    assert not import_lines.imports_project_code("from typing_extensions import ParamSpec\n")


RECURSIVE = """\
import torch.nn.functional as F


def flatten(x, depth):
    return flatten(x[0], depth - 1) if depth else x


def even(x, n):
    return odd(x, n - 1) if n else x


def odd(x, n):
    return even(x, n - 1)


def attend(q, k, v, mask, n):
    if n:
        return attend(q, k, v, mask, n - 1)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
"""


def test_functions_that_only_call_each_other_reach_no_sink():
    table = summarise(RECURSIVE)
    assert sorted(k for k in table if not k.startswith("@")) == ["attend"]
    assert table["attend"]["reach"]["attn_mask"]["param"] == "mask"


def test_a_file_that_can_hold_no_wrapper_lists_no_registry():
    src = "import json\n\nclass A:\n    pass\n\n\nKINDS = {'a': A}\n"
    assert REGISTRIES not in summarise(src, screen=False)
    assert summarise(src) == summarise(src, screen=False) == {}


def test_a_package_written_with_a_registry_still_lists_it(tmp_path):
    pkg = write_package(
        tmp_path / "p",
        {
            "attn.py": (
                "import torch.nn.functional as F\nfrom torch import nn\n\n\n"
                "class Sdpa(nn.Module):\n"
                "    def forward(self, q, k, v, mask=None):\n"
                "        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n\n\n"
                "BACKENDS = {'sdpa': Sdpa}\n"
            ),
        },
    )
    assert summarise((pkg / "attn.py").read_text())[REGISTRIES] == {"BACKENDS": "Sdpa"}
