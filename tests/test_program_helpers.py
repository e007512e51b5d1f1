"""Helpers that do the damage in one return, wherever they live (issue 26: "a
call is a call"; RULES.md MHA015, MHA016).  ``def tile(mask, heads): return
mask.repeat(heads, 1, 1)`` and ``def zero_pad(x, keep): return x * keep[...,
None]`` are read in their own file (``analysis/program/returns.py``), and the
caller's argument is judged at the call: the same finding, at the same line
and column, whether the helper is in the linted file or another one.
Checked as a user sees it: code, line and column, and the evidence's place."""
from __future__ import annotations

import textwrap

from fixture_expect import ROOT, flake8_run
from flake8_mha.lint.engine import analyze_source

HELPERS = """\
import torch


def tile_heads(mask, num_heads):
    return mask.repeat(num_heads, 1, 1)


def interleave_heads(mask, num_heads):
    return mask.repeat_interleave(num_heads, dim=0)


def zero_pad(x, keep):
    return x * keep[..., None]


def fill_pad(x, keep):
    return x.masked_fill(~keep[..., None], 0)


def where_pad(x, keep):
    return torch.where(keep[..., None], x, 0.0)


def scaled(x, s):
    return x * s


def looping(mask, num_heads):
    return looping(mask, num_heads)
"""

ENCODER = """\
import torch
import torch.nn.functional as F
from torch import nn

from .helpers import fill_pad, interleave_heads, looping, scaled, tile_heads, where_pad, zero_pad


class Encoder(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.mha = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x, lengths):
        keep = torch.arange(x.shape[1])[None, :] < lengths[:, None]
        m = ~keep[:, None, :].expand(-1, x.shape[1], -1)
        a = self.mha(x, x, x, attn_mask=tile_heads(m, self.heads), need_weights=False)[0]
        b = self.mha(x, x, x, attn_mask=interleave_heads(m, self.heads), need_weights=False)[0]
        c = self.mha(x, x, x, attn_mask=looping(m, self.heads), need_weights=False)[0]
        return a + b + c

    def attend(self, q, x, lengths):
        keep = torch.arange(x.shape[1])[None, :] < lengths[:, None]
        a = F.scaled_dot_product_attention(q, zero_pad(x, keep), x)
        b = F.scaled_dot_product_attention(q, x, fill_pad(x, keep))
        c = F.scaled_dot_product_attention(q, scaled(x, 0.5), x)
        d = F.scaled_dot_product_attention(q, zero_pad(x, keep), x, attn_mask=keep[:, None])
        e = F.scaled_dot_product_attention(q, where_pad(x, keep), x)
        return a + b + c + d + e
"""


def _write(root, name, files):
    """A package ``name`` under ``root``: an empty ``__init__.py`` and ``files``."""
    pkg = root / name
    pkg.mkdir(exist_ok=True)
    for filename, text in {"__init__.py": "", **files}.items():
        (pkg / filename).write_text(text)
    return pkg


def _package(tmp_path, helpers=HELPERS):
    return _write(tmp_path, "pkg", {"helpers.py": helpers, "encoder.py": ENCODER})


def _found(pkg, codes=("MHA015", "MHA016")):
    path = pkg / "encoder.py"
    found = analyze_source(path.read_text(), str(path), list(codes))
    return found, [(f.code, f.line, f.col) for f in found]


def test_helpers_of_another_file_are_read_at_the_call(tmp_path):
    found, where = _found(_package(tmp_path))
    # the interleaving helper, a factor that is no mask, a recursive helper and
    # scores masked beside the zeroed keys are silent
    assert where == [
        ("MHA016", 17, 13), ("MHA015", 24, 13), ("MHA015", 25, 13), ("MHA015", 28, 13)]
    assert "`tile_heads(m, self.heads)` repeats the mask head-major" in found[0].message
    assert found[0].evidence["helper"] == {
        "file": "pkg/helpers.py", "line": 5, "expansion": "mask.repeat(num_heads, 1, 1)"}
    assert found[1].evidence["mask"]["helper"] == {
        "file": "pkg/helpers.py", "line": 13, "applied": "x * keep[..., None]"}
    assert "is a keep-mask applied to the keys" in found[1].message
    assert "applied to the values" in found[2].message


def test_the_same_helpers_in_the_linted_file_give_the_same_findings():
    source = HELPERS + ENCODER.replace(
        "from .helpers import fill_pad, interleave_heads, looping, scaled, tile_heads, where_pad, "
        "zero_pad\n",
        "",
    ).replace("import torch\nimport torch.nn.functional as F\n", "import torch.nn.functional as F\n")
    found = analyze_source(textwrap.dedent(source), "one.py", ["MHA015", "MHA016"])
    shift = HELPERS.count("\n") - 2  # the helpers' lines, less the two imports dropped
    assert [(f.code, f.line - shift, f.col) for f in found] == [
        ("MHA016", 17, 13), ("MHA015", 24, 13), ("MHA015", 25, 13), ("MHA015", 28, 13)]
    assert found[0].evidence["helper"]["file"] is None  # the linted file
    assert found[0].evidence["helper"]["line"] == 5


def test_an_edit_of_the_helper_file_is_read_again(tmp_path):
    pkg = _package(tmp_path)
    assert _found(pkg)[1][0] == ("MHA016", 17, 13)
    (pkg / "helpers.py").write_text(HELPERS.replace(
        "return mask.repeat(num_heads, 1, 1)", "return mask.repeat_interleave(num_heads, dim=0)"))
    assert [w for w in _found(pkg)[1] if w[0] == "MHA016"] == []


def test_a_helper_that_keeps_its_mask_elsewhere_is_not_read(tmp_path):
    # two returns, or a mask that is no parameter: nothing to bind at the call
    helpers = HELPERS.replace(
        "def tile_heads(mask, num_heads):\n    return mask.repeat(num_heads, 1, 1)\n",
        "def tile_heads(mask, num_heads):\n    if num_heads == 1:\n        return mask\n"
        "    return mask.repeat(num_heads, 1, 1)\n",
    ).replace("return x * keep[..., None]", "return x * GLOBAL_KEEP[..., None]")
    where = _found(_package(tmp_path, helpers))[1]
    assert where == [("MHA015", 25, 13), ("MHA015", 28, 13)]


def test_the_fixture_package_through_flake8_per_file_and_over_the_package():
    package = "fixtures/program_calls/helpers"
    want = [("encoder.py", 17, 16, "MHA016"), ("model.py", 16, 16, "MHA015"),
            ("model.py", 20, 16, "MHA015")]
    status, found = flake8_run(package, select="MHA")
    assert status == 1
    assert sorted((f.path.rsplit("/", 1)[1], f.line, f.col, f.code) for f in found) == want
    for name in ("encoder.py", "model.py"):
        status, found = flake8_run(f"{package}/{name}", select="MHA")
        assert sorted((f.line, f.col, f.code) for f in found) == [
            (w[1], w[2], w[3]) for w in want if w[0] == name]


def test_the_model_file_is_let_in_by_the_project_aware_gate():
    from flake8_mha.core.torch_api import TRIGGER_WORDS

    path = "fixtures/program_calls/helpers/model.py"
    text = (ROOT / path).read_text()
    assert [w for w in TRIGGER_WORDS if w in text] == []  # the word pre-filter turns it away
    status, found = flake8_run(path, select="MHA")
    assert (status, [(f.line, f.col, f.code) for f in found]) == (
        1, [(16, 16, "MHA015"), (20, 16, "MHA015")])


# --------------------------------------------------------------------------- factories

FACTORY = """\
from torch import nn


def make_mha(dim, heads):
    return nn.MultiheadAttention(dim, heads, batch_first=True)


def make_either(dim, heads, linear=False):
    if linear:
        return nn.Linear(dim, dim)
    return nn.MultiheadAttention(dim, heads, batch_first=True)
"""

MIXER = """\
import torch
from torch import nn

from .factory import make_either, make_mha


class Mixer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.mix = make_mha(dim, heads)
        self.other = make_either(dim, heads)

    def forward(self, x, lengths):
        keep = torch.arange(x.shape[1])[None, :] < lengths[:, None]
        a = self.mix(x, x, x, key_padding_mask=keep, need_weights=False)[0]
        b = self.other(x, x, x, key_padding_mask=keep, need_weights=False)[0]
        c = self.mix(x, x, x, key_padding_mask=~keep, need_weights=False)[0]
        return a + b + c
"""


def _factory_package(tmp_path, factory=FACTORY):
    pkg = _write(tmp_path, "fpkg", {"factory.py": factory, "mixer.py": MIXER})
    path = pkg / "mixer.py"
    found = analyze_source(path.read_text(), str(path), ["MHA003"])
    return [(f.code, f.line, f.col) for f in found]


def test_a_module_a_factory_of_another_file_returns_is_that_module_at_its_calls(tmp_path):
    # make_either may return a Linear: its module is not known, silent
    assert _factory_package(tmp_path) == [("MHA003", 15, 13)]


def test_an_edit_of_the_factory_is_read_again(tmp_path):
    assert _factory_package(tmp_path) == [("MHA003", 15, 13)]
    assert _factory_package(tmp_path, FACTORY.replace(
        "def make_mha(dim, heads):\n    return nn.MultiheadAttention(dim, heads, batch_first=True)",
        "def make_mha(dim, heads):\n    return nn.Linear(dim, dim)")) == []


def test_the_factory_package_through_flake8_per_file_and_over_the_package():
    package = "fixtures/program_calls/factory_modules"
    want = [(15, 16, "MHA003"), (15, 16, "MHA102")]
    for target in (package, f"{package}/model.py"):
        status, found = flake8_run(target, select="MHA")
        assert status == 1
        assert sorted((f.line, f.col, f.code) for f in found) == want


def test_the_mask_may_be_either_factor_of_the_helper(tmp_path):
    use = (
        "import torch\nimport torch.nn.functional as F\n\nfrom .ops import gate\n\n\n"
        "def attend(q, x, lengths):\n"
        "    keep = torch.arange(x.shape[1])[None, :] < lengths[:, None]\n"
        "    return F.scaled_dot_product_attention(q, gate(keep, x), x)\n")
    ops = "def gate(keep, x):\n    return keep[..., None] * x\n"
    path = _write(tmp_path, "either", {"ops.py": ops, "use.py": use}) / "use.py"
    found = analyze_source(path.read_text(), str(path), ["MHA015"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA015", 9, 12)]
    assert found[0].evidence["mask"]["helper"]["applied"] == "keep[..., None] * x"


def test_a_caller_whose_factor_is_not_the_head_count_is_silent(tmp_path):
    # the helper names its factor num_heads, but this caller doubles the batch
    # (classifier-free guidance): not a head tiling
    pkg = _package(tmp_path)
    text = ENCODER.replace("tile_heads(m, self.heads)", "tile_heads(m, 2)")
    (pkg / "encoder.py").write_text(text)
    path = pkg / "encoder.py"
    found = analyze_source(text, str(path), ["MHA016"])
    assert found == []


def test_a_damaged_stored_reading_is_read_again(tmp_path):
    from flake8_mha.analysis.program import files
    from flake8_mha.analysis.program.returns import _valid_form

    assert _valid_form({}) and not _valid_form([]) and not _valid_form({"params": ["m"]})
    assert _valid_form({"params": ["m"], "all_params": ["m", "h"], "via": "repeat"})
    files._MEMO.clear()  # read from the store, not this process's memory
    pkg = _package(tmp_path)

    class Store(dict):
        def put(self, key, value):
            self[key] = {"params": "damaged"} if "params" in value else value

    store = Store()
    path = pkg / "encoder.py"
    from flake8_mha.analysis.program.callsites import Project

    for _ in range(2):  # the second run reads the damaged entries: read again
        files._MEMO.clear()
        project = Project(str(path), store)
        found = analyze_source(path.read_text(), str(path), ["MHA016"], project=project)
        assert [(f.code, f.line, f.col) for f in found] == [("MHA016", 17, 13)]


BINDINGS = """\
import torch
import torch.nn.functional as F
from torch import nn


def tile_kw(mask, *, num_heads):
    return mask.repeat(num_heads, 1, 1)


def tile_two(mask, num_heads=2):
    return mask.repeat(num_heads, 1, 1)


class Enc(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.heads = h
        self.mha = nn.MultiheadAttention(d, h, batch_first=True)

    @staticmethod
    def tile(mask, num_heads):
        return mask.repeat(num_heads, 1, 1)

    @staticmethod
    def zero_pad(x, keep):
        return x * keep[..., None]

    def forward(self, x, q, lengths):
        N, L, _ = x.shape
        keep = torch.arange(L)[None, :] < lengths[:, None]
        m = (~keep)[:, None, :].expand(N, L, L)
        a = self.mha(x, x, x, attn_mask=tile_kw(m, num_heads=self.heads), need_weights=False)[0]
        b = self.mha(x, x, x, attn_mask=tile_two(m), need_weights=False)[0]
        c = self.mha(x, x, x, attn_mask=self.tile(m, self.heads), need_weights=False)[0]
        d = F.scaled_dot_product_attention(q, self.zero_pad(x, keep), x)
        mask = m[None].expand(self.heads, N, L, L)
        mask = mask.reshape(-1, L, L)
        e = self.mha(x, x, x, attn_mask=mask, need_weights=False)[0]
        return a + b + c + d + e
"""


def test_keyword_only_static_and_default_parameters_bind_as_python_binds_them():
    found = analyze_source(BINDINGS, "bindings.py", ["MHA015", "MHA016"])
    # tile_two(m) repeats by its default 2 (not the head count): silent; the
    # reassigned ``mask`` is read where it was written
    assert [(f.code, f.line, f.col) for f in found] == [
        ("MHA016", 32, 13), ("MHA016", 34, 13), ("MHA015", 35, 13), ("MHA016", 38, 13)]
