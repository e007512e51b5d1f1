"""A constructor flag handed down through the constructors of the package's
classes (issue 26, item 3; docs/reach.md, "Facts from the callers").

``fixtures/program_calls/forwarded``: ``Attention(causal=False)`` builds
``Attend(causal=causal)``.  No construction asks ``Attention`` to be causal,
so ``Attend``'s SDPA call never meets a mask with ``is_causal=True``; its
twin ``DecoderAttend`` is built by a ``DecoderAttention(causal=True)``: MHA006,
with the exact line, column and message, per file, over the package, and
through ``check``; an edit of the file two classes away moves the finding."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from fixture_expect import FIXTURES, ROOT, expected, flake8_run
from flake8_mha.lint import engine

PKG = FIXTURES / "program_calls" / "forwarded"
REL = "fixtures/program_calls/forwarded/"
MESSAGE = (
    "scaled_dot_product_attention given attn_mask together with is_causal: it raises with "
    "dropout and silently applies both masks otherwise; every construction of DecoderAttend "
    "in the project (1) passes causal=True"
)
WANT = {("attend.py", 25, 16, "MHA006"): MESSAGE}


def test_the_fixture_expects_what_this_test_says():
    assert {("attend.py",) + e for e in expected(PKG / "attend.py")} == set(WANT)
    assert all(not expected(p) for p in PKG.glob("*.py") if p.name != "attend.py")


def _flake8(*args):
    status, found = flake8_run(*args)
    return status, {(f.path.rsplit("/", 1)[-1], f.line, f.col, f.code): f.msg for f in found}


def test_flake8_over_the_package_and_one_file():
    assert _flake8(REL) == (1, WANT)
    assert _flake8(REL + "attend.py") == (1, WANT)
    assert _flake8(REL + "layers.py") == (0, {})


def test_check_reports_the_same():
    proc = subprocess.run(
        [sys.executable, "-m", "flake8_mha.frontends.cli", "check", "--no-cache", "--format",
         "json", REL],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    found = json.loads(proc.stdout)["findings"]
    got = {(f["path"].rsplit("/", 1)[-1], f["line"], f["col"], f["code"]): f["message"]
           for f in found}
    assert got == WANT


def _copy(tmp_path):
    pkg = tmp_path / "forwarded"
    shutil.copytree(PKG, pkg)
    return pkg


def _found(path):
    return [(f.line, f.col, f.code) for f in engine.analyze_file(str(path))]


@pytest.mark.parametrize("change, found", [
    # the model asks the encoder to be causal: Attend's pair meets too
    (("Attention(dim, heads=8)", "Attention(dim, heads=8, causal=True)"),
     [(14, 16, "MHA006"), (25, 16, "MHA006")]),
    # one of two constructions leaves the flag open
    (("self.encoder = nn.ModuleList([Attention(dim, heads=8) for _ in range(depth)])",
      "self.encoder = nn.ModuleList([Attention(dim, heads=8) for _ in range(depth)])\n"
      "        self.extra = Attention(dim, causal=depth > 1)"),
     [(14, 16, "MHA006"), (25, 16, "MHA006")]),
    # the decoder no longer causal: both clean
    (("DecoderAttention(dim, heads=8, causal=True)", "DecoderAttention(dim, heads=8)"), []),
])
def test_an_edit_two_classes_away_moves_the_finding(tmp_path, change, found):
    pkg = _copy(tmp_path)
    model = pkg / "model.py"
    text = model.read_text()
    assert change[0] in text
    model.write_text(text.replace(change[0], change[1]))
    assert _found(pkg / "attend.py") == found


def test_a_parameter_rebound_in_the_constructor_is_not_forwarded(tmp_path):
    pkg = _copy(tmp_path)
    layers = pkg / "layers.py"
    text = layers.read_text()
    old = "        self.attend = Attend(causal=causal, dropout=dropout)"
    assert old in text
    layers.write_text(text.replace(old, "        causal = not causal\n" + old))
    assert _found(pkg / "attend.py") == [(14, 16, "MHA006"), (25, 16, "MHA006")]


def test_without_the_project_the_flag_is_open():
    text = (PKG / "attend.py").read_text()
    got = engine.analyze_source(text, str(PKG / "attend.py"), project=False)
    assert [(f.line, f.col, f.code) for f in got] == [(14, 16, "MHA006"), (25, 16, "MHA006")]


def test_an_edit_two_classes_away_invalidates_the_cached_finding(tmp_path, monkeypatch, capsys):
    from flake8_mha.frontends.check import main as check_main

    monkeypatch.chdir(tmp_path)
    pkg = _copy(tmp_path)

    def run():
        status = check_main(["--format", "json", "forwarded/attend.py"])
        found = json.loads(capsys.readouterr().out)["findings"]
        return status, [(f["line"], f["code"]) for f in found]

    first = run()
    assert first == run() == (1, [(25, "MHA006")])  # the second from the cache
    model = pkg / "model.py"
    model.write_text(model.read_text().replace("Attention(dim, heads=8)",
                                               "Attention(dim, heads=8, causal=True)"))
    assert run() == (1, [(14, "MHA006"), (25, "MHA006")])


def test_a_rate_handed_down_four_constructors_and_through_super_init():
    """iopaint's BiRefNet backbones: ``WindowAttention`` four constructors
    below an ``attn_drop_rate=0.0`` no builder changes, a PVT variant that
    calls ``super().__init__(...)`` without it, and ``super(SwinTransformer,
    self).train(mode)``: 0 in this program, no MHA007; the decoder's
    ``attn_drop=0.1``: MHA007 (``fixtures/program_calls/deep_dropout``)."""
    from fixture_expect import assert_package_runs

    assert_package_runs("fixtures/program_calls/deep_dropout",
                        [("attention.py", 31, 15, "MHA007")])


def test_a_subclass_without_its_own_init_leaves_the_base_unsettled(tmp_path):
    from fixture_expect import copied

    pkg = copied(FIXTURES / "program_calls" / "deep_dropout", tmp_path)
    path = pkg / "backbones.py"
    text = path.read_text(encoding="utf-8")
    text = text.replace(
        "class pvt_v2_b0(PyramidVisionTransformer):\n"
        "    def __init__(self, **kwargs):\n"
        "        super().__init__(embed_dim=32, num_heads=1, depth=2)\n",
        "class pvt_v2_b0(PyramidVisionTransformer):\n    pass\n")
    path.write_text(text, encoding="utf-8")
    got = engine.analyze_file(str(pkg / "attention.py"), ["MHA007"])
    assert [(f.line, f.col) for f in got] == [(16, 15), (31, 15)]


DIT = """\
import torch.nn as nn

from .attention import WindowAttention


class DiTBlock(nn.Module):
    def __init__(self, hidden_size, num_heads, mlp_ratio=4.0, **block_kwargs):
        super().__init__()
        self.attn = WindowAttention(hidden_size, num_heads, **block_kwargs)


class DiT(nn.Module):
    def __init__(self, hidden_size=64, depth=2, num_heads=4):
        super().__init__()
        self.blocks = nn.ModuleList([DiTBlock(hidden_size, num_heads, BLOCK) for _ in range(depth)])
"""


@pytest.mark.parametrize("block, reported", [
    ("mlp_ratio=4.0", False),  # the splat carries no rate: the attention's default 0.0
    ("attn_drop=0.0", False),
    ("attn_drop=0.2", True),
])
def test_a_rate_passed_on_in_kwargs(tmp_path, block, reported):
    """DiT's ``Attention(hidden_size, num_heads, **block_kwargs)`` (torch-molecule's
    demodiff): what the block's constructions pass by that name, else the
    attention's own default."""
    from fixture_expect import copied

    pkg = copied(FIXTURES / "program_calls" / "deep_dropout", tmp_path)
    (pkg / "dit.py").write_text(DIT.replace("BLOCK", block), encoding="utf-8")
    got = engine.analyze_file(str(pkg / "attention.py"), ["MHA007"])
    want = [(16, 15), (31, 15)] if reported else [(31, 15)]
    assert [(f.line, f.col) for f in got] == want


def test_kwargs_the_block_changes_settle_nothing(tmp_path):
    from fixture_expect import copied

    pkg = copied(FIXTURES / "program_calls" / "deep_dropout", tmp_path)
    text = DIT.replace("BLOCK", "mlp_ratio=4.0").replace(
        "        self.attn = WindowAttention(",
        "        block_kwargs.setdefault('attn_drop', 0.1)\n        self.attn = WindowAttention(")
    (pkg / "dit.py").write_text(text, encoding="utf-8")
    got = engine.analyze_file(str(pkg / "attention.py"), ["MHA007"])
    assert [(f.line, f.col) for f in got] == [(16, 15), (31, 15)]
