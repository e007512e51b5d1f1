"""Issue 26: MHA102 through a wrapper.

``fixtures/program_calls/weights``: a module (or method) that returns
``nn.MultiheadAttention``'s pair of results is reported at that call when
every call of it in the package keeps only the output, wherever the callers
are (another file, the same file), and when need_weights is the wrapper's own
parameter that every caller leaves True.  A caller that reads the weights, a
call the analysis cannot read, or a wrapper nothing in the package calls
leaves it unreported (docs/MHA102.md)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from fixture_expect import (
    FIXTURES, ROOT, assert_package_messages, check_json, check_rows, copied, engine_rows, flake8_run,
    write_package,
)
from flake8_mha.lint import engine

PKG = FIXTURES / "program_calls" / "weights"
REL = "fixtures/program_calls/weights/"
TAIL = "pass need_weights=False, or nn.MultiheadAttention takes the slow path (up to about 2x off the fastpath) to build them"


def _msg(key, where):
    return f"attention weights computed and thrown away by every caller of `{key}` ({where}): {TAIL}"


MESSAGES = {
    ("attention.py", 17, 16, "MHA102"): _msg("SelfAttention.forward", REL + "model.py line 17 and 1 more"),
    ("attention.py", 28, 16, "MHA102"): _msg("CrossAttention.forward", REL + "model.py line 20"),
    ("local.py", 15, 16, "MHA102"): _msg("Pooled.attention", "line 18"),
    # the weights handed on in a pair of the wrapper's own, or as the named whole
    ("pairs.py", 18, 37, "MHA102"): _msg("PairAttention.forward", REL + "encoder.py line 15"),
    ("pairs.py", 31, 15, "MHA102"): _msg("WholeAttention.forward", REL + "encoder.py line 16"),
    # a wrapper of a wrapper: the caller that returns the pair, then that function's callers
    ("stacked.py", 14, 16, "MHA102"): _msg("InnerAttention.forward",
                                           "line 24, returned by `Stacked.forward`"),
}


def test_flake8_over_the_package_and_on_each_file_alone():
    assert_package_messages(PKG, MESSAGES)


def test_flake8_from_an_editor_buffer():
    # the wrapper's file as an editor sends it: on stdin, named by --stdin-display-name
    path = PKG / "attention.py"
    status, found = flake8_run("--stdin-display-name", REL + "attention.py", "-",
                               stdin=path.read_text(encoding="utf-8"))
    assert status == 1
    assert {(f.line, f.col, f.code) for f in found} == {(17, 16, "MHA102"), (28, 16, "MHA102")}


def test_check_reports_what_flake8_reports():
    status, found, stderr = check_json(REL)
    assert status == 1, stderr
    assert {(f["path"].rsplit("/", 1)[-1], f["line"], f["col"], f["code"]): f["message"]
            for f in found} == MESSAGES


def test_the_fix_turns_the_weights_off_where_the_call_is(tmp_path):
    pkg = copied(PKG, tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "flake8_mha.frontends.cli", "check", "--no-cache", "--fix", "--select",
         "MHA102", str(pkg)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    text = (pkg / "attention.py").read_text()
    assert "return self.mha(x, x, x, key_padding_mask=pad, need_weights=False)" in text
    # the wrapper's own parameter: no fix (its default, or the callers, are the author's to change)
    assert "return self.mha(x, memory, memory, need_weights=need_weights)" in text
    assert "return self.mha(x, x, x, need_weights=False)" in (pkg / "local.py").read_text()
    assert engine_rows(pkg / "attention.py") == [(28, 16, "MHA102")]


# ------------------------------------------------ what leaves the weights' use open


REPORTED = [(17, 16, "MHA102"), (28, 16, "MHA102")]


def test_the_fixture_in_a_copy(tmp_path):
    assert engine_rows(copied(PKG, tmp_path) / "attention.py") == REPORTED


@pytest.mark.parametrize("change, gone", [
    # a caller reads the weights, returns the pair, or hands it on whole
    (("h, _ = self.attn(x, pad)", "h, w = self.attn(x, pad)\n        self.w = w"), 17),
    (("x = x + self.attn(x)[0]", "x = x + self.attn(x)[1].mean()"), 17),
    (("x = x + self.attn(x)[0]", "return self.attn(x)"), 17),
    (("x = x + self.cross(x, memory)[0]", "pair = self.cross(x, memory)\n        x = x + pair[0]"), 28),
    # a caller asks for the weights by the wrapper's parameter
    (("self.cross(x, memory)[0]", "self.cross(x, memory, need_weights=True)[1]"), 28),
    (("self.cross(x, memory)[0]", "self.cross(x, memory, need_weights=flag)[0]"), 28),
    # the instance kept where its calls cannot all be seen, or the class subclassed
    (("self.attn = SelfAttention(dim, heads)", "self.attn = [SelfAttention(dim, heads)]"), 17),
    (("class Layer(nn.Module):", "class Sub(SelfAttention):\n    pass\n\n\nclass Layer(nn.Module):"), 17),
    # a Sequential: its result is the last item's, or goes on to the next one
    (("self.cross = CrossAttention(dim, heads)",
      "self.cross = nn.Sequential(CrossAttention(dim, heads))"), 28),
])
def test_a_caller_that_may_keep_the_weights_leaves_the_finding_out(tmp_path, change, gone):
    pkg = copied(PKG, tmp_path)
    model = pkg / "model.py"
    text = model.read_text()
    assert change[0] in text
    model.write_text(text.replace(change[0], change[1]))
    assert engine_rows(pkg / "attention.py") == [f for f in REPORTED if f[0] != gone]


def test_a_wrapper_nothing_in_the_package_calls_keeps_its_silence(tmp_path):
    pkg = copied(PKG, tmp_path)
    (pkg / "model.py").unlink()
    assert engine_rows(pkg / "attention.py") == []


def test_this_file_alone_knows_no_caller():
    text = (PKG / "attention.py").read_text()
    assert engine.analyze_source(text, str(PKG / "attention.py"), project=False) == []


def test_an_edit_of_a_caller_invalidates_the_cached_finding(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    pkg = copied(PKG, tmp_path)

    def run():
        return check_rows("weights/attention.py", capsys)

    first = run()
    assert first == (1, [(17, "MHA102"), (28, "MHA102")])
    assert run() == first  # from the cache
    model = pkg / "model.py"
    model.write_text(model.read_text().replace("h, _ = self.attn(x, pad)",
                                               "h, w = self.attn(x, pad)\n        self.w = w"))
    assert run() == (1, [(28, "MHA102")])


def test_the_pre_commit_check_of_a_changed_caller_checks_the_wrapper(monkeypatch, capsys):
    # a commit that changes only model.py: the findings it makes are in attention.py
    from flake8_mha.frontends.check import main as check_main

    monkeypatch.chdir(ROOT)
    assert check_main(["--isolated", "--no-cache", REL + "model.py"]) == 0
    capsys.readouterr()
    status = check_main(["--isolated", "--no-cache", "--dependents", REL + "model.py"])
    out = capsys.readouterr().out.splitlines()
    assert status == 1
    assert [line.split(" MHA")[0] for line in out] == [
        REL + "attention.py:17:16:", REL + "attention.py:28:16:"]


@pytest.mark.parametrize("path, change, gone", [
    # a caller reads the weights the pair hands on
    ("encoder.py", ("h, _ = self.pair(x, pad)", "h, w = self.pair(x, pad)\n        self.w = w"), 18),
    # the wrapper reads its weights too, or returns something else on one path
    ("pairs.py", ("        attn_output = self.proj(attn_output)\n",
                  "        attn_output = self.proj(attn_output) * attn_weights.sum()\n"), 18),
    ("pairs.py", ("        out = self.mha(x, x, x)  # MHA102:15\n",
                  "        out = self.mha(x, x, x)  # MHA102:15\n        if x.dim() == 2:\n"
                  "            return x, None\n"), 31),
])
def test_weights_a_pair_hands_on_that_may_be_read_are_left_alone(tmp_path, path, change, gone):
    pkg = copied(PKG, tmp_path)
    target = pkg / path
    text = target.read_text()
    assert change[0] in text
    target.write_text(text.replace(change[0], change[1]))
    want = [(18, 37, "MHA102"), (31, 15, "MHA102")]
    assert engine_rows(pkg / "pairs.py") == [w for w in want if w[0] != gone]


@pytest.mark.parametrize("change", [
    # the outer wrapper's caller reads the weights
    ("        out, _ = self.layer(x)\n", "        out, w = self.layer(x)\n        self.w = w\n"),
    # nothing in the package calls the outer wrapper: its callers are outside
    ("        out, _ = self.layer(x)\n", "        out = x\n"),
])
def test_a_wrapper_of_a_wrapper_whose_callers_may_keep_the_weights(tmp_path, change):
    pkg = copied(PKG, tmp_path)
    decoder = pkg / "decoder.py"
    text = decoder.read_text()
    assert change[0] in text
    decoder.write_text(text.replace(change[0], change[1]))
    assert engine_rows(pkg / "stacked.py") == []


def test_another_class_s_attribute_of_the_same_name_is_not_a_caller(tmp_path):
    """``self.attn`` in a class that keeps another module there does not call
    the wrapper: its use of the result says nothing of the weights."""
    pkg = write_package(tmp_path / "pkg", {})
    (pkg / "attention.py").write_text(
        "import torch.nn as nn\n\n\n"
        "class SelfAttention(nn.Module):\n"
        "    def __init__(self, d, h):\n"
        "        super().__init__()\n"
        "        self.mha = nn.MultiheadAttention(d, h, batch_first=True)\n\n"
        "    def forward(self, x):\n"
        "        return self.mha(x, x, x)\n\n\n"
        "class Other(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x\n")
    blocks = (
        "import torch.nn as nn\n\n"
        "from .attention import Other, SelfAttention as SA\n\n\n"
        "class Enc(nn.Module):\n"
        "    def __init__(self, d, h):\n"
        "        super().__init__()\n"
        "        self.attn = SA(d, h)\n\n"
        "    def forward(self, x):\n"
        "        h, _ = self.attn(x)\n"
        "        return h\n\n\n"
        "class Mixer(nn.Module):\n"
        "    def __init__(self, d):\n"
        "        super().__init__()\n"
        "        self.attn = Other()\n\n"
        "    def forward(self, x):\n"
        "        return x + self.attn(x)\n")
    (pkg / "blocks.py").write_text(blocks)
    rows = lambda: [(f.code, f.line, f.col) for f in engine.analyze_file(str(pkg / "attention.py"), ["MHA102"])]  # noqa: E731
    assert rows() == [("MHA102", 10, 16)]
    # a class that may keep the wrapper there (assigned from a parameter) may keep the weights
    (pkg / "blocks.py").write_text(blocks.replace("self.attn = Other()", "self.attn = d"))
    assert rows() == []
