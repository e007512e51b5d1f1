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
JOINED = pathlib.Path("fixtures/program_calls/joined_masks")


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
    # where it is right, and the addition is no path of a bool mask
    assert _rows(KIND_GUARDED, ["MHA002", "MHA004"], tmp_path) == []
    flagged = KIND_GUARDED.replace(
        "def attend(q, k, v, mask):", "def attend(q, k, v, mask, eager=False):"
    ).replace("    if mask.dtype == torch.bool:", "    if not eager:")
    # a flag picks the path: the addition is judged at the call, where the mask enters
    assert _rows(flagged, ["MHA002", "MHA004"], tmp_path) == [(14, 12, "MHA004")]


BRANCHED = """\
import torch
import torch.nn.functional as F


def attend(q, k, v, mask):
    if TEST:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    else:
        scores = q @ k.transpose(-2, -1) + mask
        out = scores.softmax(dim=-1) @ v
    return out


def forward(q, k, v, lengths):
    keep = torch.arange(k.shape[-2])[None, None, None, :] < lengths[:, None, None, None]
    return attend(q, k, v, keep)
"""


def test_an_addition_on_the_branch_no_bool_mask_takes_is_not_judged(tmp_path):
    for test in ("mask.dtype == torch.bool", "not mask.is_floating_point()"):
        assert _rows(BRANCHED.replace("TEST", test), ["MHA004"], tmp_path) == []
    # the other way round, the bool mask is what is added
    wrong = BRANCHED.replace("TEST", "mask.dtype != torch.bool")
    assert _rows(wrong, ["MHA004"], tmp_path) == [(9, 18, "MHA004")]


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


PARTIAL_DROPOUT = """\
from functools import partial

import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attend = partial(F.scaled_dot_product_attention, dropout_p=cfg.attn_pdrop)
        self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self.attend(q, k, v)
"""


def test_a_partial_s_dropout_from_the_config_is_the_module_s(tmp_path):
    # probe AE's AE24: fixed when the partial is made, never gated in forward
    assert _rows(PARTIAL_DROPOUT, ["MHA007"], tmp_path) == [(15, 16, "MHA007")]
    gated = PARTIAL_DROPOUT.replace(
        "        return self.attend(q, k, v)\n",
        "        if not self.training:\n            return F.scaled_dot_product_attention(q, k, v)\n"
        "        return self.attend(q, k, v)\n",
    )
    assert _rows(gated, ["MHA007"], tmp_path) == []
    zero = PARTIAL_DROPOUT.replace("dropout_p=cfg.attn_pdrop", "dropout_p=0.0")
    assert _rows(zero, ["MHA007"], tmp_path) == []


def test_a_padding_mask_joined_to_the_causal_triangle_and_keys_zeroed_in_another_file():
    # probe AL's AL19 (``causal & pad`` handed to SDPA, ``pad`` True on the left
    # padding: only the padding is attended) and AL13 (``return k * keep, v *
    # keep`` in utils.py: the mask the two items share)
    found = assert_package_runs(
        str(JOINED),
        [
            ("model.py", 11, 12, "MHA002"),
            ("model.py", 24, 12, "MHA015"),
        ],
    )
    messages = {(f.line, f.code): f.msg for f in found}
    assert "masks.py:8" in messages[(11, "MHA002")]
    assert "joined by &, means True = ignore" in messages[(11, "MHA002")]
    assert "(make that part a keep-mask before the &)" in messages[(11, "MHA002")]


def test_the_conjunction_judged_in_one_file(tmp_path):
    src = (
        "import torch\nimport torch.nn.functional as F\n\n\n"
        "def prefill(q, k, v, lengths):\n"
        "    S = q.size(2)\n"
        "    pad = torch.arange(S)[None, :] < (S - lengths)[:, None]\n"
        "    causal = torch.ones(S, S, dtype=torch.bool).tril()\n"
        "    mask = causal[None, None] & pad[:, None, None, :]\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n"
    )
    assert _rows(src, ["MHA002"], tmp_path) == [(10, 12, "MHA002")]
    assert _rows(src.replace("& pad[", "& ~pad["), ["MHA002"], tmp_path) == []
    # two ignore-masks joined are one ignore-mask: MHA002 as for any
    future = src.replace(".tril()", ".triu(1)")
    assert _rows(future, ["MHA002"], tmp_path) == [(10, 12, "MHA002")]


TRANAD = """\
import torch.nn as nn
from torch.nn import TransformerDecoder


class DecoderLayer(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=0.1)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None):
        return tgt + self.self_attn(tgt, tgt, tgt)[0]


class Net(nn.Module):
    def __init__(self, feats):
        super().__init__()
        self.decoder = TransformerDecoder(DecoderLayer(2 * feats, 2), 1)

    def encode(self, src, tgt):
        return tgt.repeat(1, 1, 2), src.repeat(1, 1, 2)

    def forward(self, src, tgt):
        return self.decoder(*self.encode(src, tgt))


class Detector:
    def __init__(self, feats):
        self.n_features = feats
        self.model = Net(feats)

    def run(self, batch_x):
        local_bs = batch_x.shape[0]
        window = batch_x.permute(1, 0, 2)
        elem = window[-1, :, :].view(1, local_bs, self.n_features)
        return self.model(window, elem)
"""


def test_a_one_position_query_repeated_over_its_features_stays_one_position(tmp_path):
    # release review 38's deepod TranAD: ``view(1, local_bs, self.n_features)``
    # then ``tgt.repeat(1, 1, 2)``: the weights are (N, 1, S), nothing to save
    assert _rows(TRANAD, ["MHA102"], tmp_path) == []


def test_a_class_of_the_same_name_in_an_importer_is_not_a_construction(tmp_path):
    # release review 38's deepod: tranad.py builds its own TransformerEncoderLayer
    pkg = write_package(
        tmp_path / "p",
        {
            "layers.py": (
                "import torch.nn as nn\n\n\n"
                "class EncoderLayer(nn.Module):\n"
                "    def __init__(self, d, h, dropout=0.1):\n"
                "        super().__init__()\n"
                "        self.attn = nn.MultiheadAttention(d, h, dropout=dropout)\n\n"
                "    def forward(self, x):\n"
                "        return self.attn(x, x, x, need_weights=False)[0]\n"
            ),
            "model.py": "from .layers import EncoderLayer\n\nLAYER = EncoderLayer(64, 4, 0.0)\n",
            "other.py": (
                "from . import model  # noqa: F401\n\n\n"
                "class EncoderLayer:\n    def __init__(self, *a):\n        pass\n\n\n"
                "BUILT = EncoderLayer(1, 2, 3)\n"
            ),
        },
    )
    found = analyze_file(str(pkg / "layers.py"))
    # MHA102 aside, no rule may read other.py's class as layers.py's: every
    # construction of EncoderLayer in the project is model.py's one
    from flake8_mha.analysis.program import callers

    built, _ = callers.constructions(str(pkg / "layers.py"), "EncoderLayer", ["d", "h", "dropout"])
    assert [c["dropout"] for c in built] == [0.0]
    assert all(f.code != "MHA000" for f in found)
