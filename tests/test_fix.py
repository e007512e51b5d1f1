"""Autofix: ``flake8-mha check --fix`` / ``--diff`` and the fix registry."""
from __future__ import annotations

import ast
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

from flake8_mha.lint.engine import analyze_source
from flake8_mha.app.fix import FIXES, NEVER_FIXED, Fix, fix_source, fixable_codes, register
from flake8_mha.rules.base import REGISTRY, all_rules

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"


def run(*args: str, cwd) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def fix(source: str, codes=None):
    source = textwrap.dedent(source)
    findings = analyze_source(source, "t.py", codes=codes or sorted(fixable_codes()))
    return fix_source(source, findings)


def fixed_text(source: str, codes=None) -> str:
    return fix(source, codes)[0]


def codes_after(source: str):
    return [f.code for f in analyze_source(source, "t.py", codes=sorted(fixable_codes()))]


# -- the rules' own INVALID examples --------------------------------------------------------

def _examples_with_fix():
    all_rules()
    fixable_codes()
    out = []
    for code, rule in sorted(REGISTRY.items()):
        for n, ex in enumerate(rule.INVALID):
            if ex.fixed is not None:
                out.append(pytest.param(rule, ex, id=f"{code}-{n}"))
    return out


@pytest.mark.parametrize("rule, example", _examples_with_fix())
def test_invalid_example_is_fixed_exactly(rule, example):
    assert rule.CODE in FIXES, f"{rule.CODE} has an example with fixed= but no fix is registered"
    findings = analyze_source(example.source, "ex.py", codes=[rule.CODE])
    assert [(f.line, f.col) for f in findings] == [(example.line, example.col)]
    new, fixed = fix_source(example.source, findings)
    assert new == example.fixed
    assert [f.code for f in fixed] == [rule.CODE]
    ast.parse(new)
    assert analyze_source(new, "ex.py", codes=[rule.CODE]) == []


def test_every_fix_title_and_safety_is_written():
    for code, f in FIXES.items():
        assert code in REGISTRY, code
        assert f.title and f.safety
    assert {"MHA006", "MHA007", "MHA102"} <= set(FIXES)


def test_mha001_is_never_fixed():
    assert "MHA001" in NEVER_FIXED and "MHA001" not in FIXES
    with pytest.raises(ValueError, match="never auto-fixed"):
        register(Fix("MHA001", "x", "y", lambda call, ctx: None))


def _need_mha002():
    all_rules()
    assert "MHA002" in REGISTRY


def test_mha002_fix_inverts_the_rules_invalid_examples_at_the_sink():
    _need_mha002()
    assert "MHA002" in fixable_codes()
    expected = ["attn_mask=~pad[:, None, None, :])", "(q, k, v, ~future)"]
    examples = REGISTRY["MHA002"].INVALID
    assert len(examples) >= 2
    for example, want in zip(examples, expected):
        findings = analyze_source(example.source, "ex.py", codes=["MHA002"])
        new, fixed = fix_source(example.source, findings)
        assert [f.code for f in fixed] == ["MHA002"]
        changed = [line for line in new.splitlines() if line not in example.source.splitlines()]
        assert len(changed) == 1 and changed[0].endswith(want)
        assert analyze_source(new, "ex.py", codes=["MHA002"]) == []


def test_mha002_fix_leaves_a_numeric_mask_alone():
    _need_mha002()
    src = textwrap.dedent("""\
        import torch
        import torch.nn.functional as F

        def attend(q, k, v, L):
            future = torch.triu(torch.ones(L, L), diagonal=1)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=future)
        """)
    findings = analyze_source(src, "t.py", codes=["MHA002"])
    for f in findings:
        assert f.evidence.get("mask", {}).get("kind") != "bool"
    assert fix_source(src, findings) == (src, [])


def test_mha002_fix_leaves_a_mask_decided_by_a_caller_alone():
    _need_mha002()
    src = textwrap.dedent("""\
        import torch.nn.functional as F

        def attend(q, k, v, mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

        def model(q, k, v, tokens, pad_id):
            return attend(q, k, v, (tokens == pad_id)[:, None, None, :])
        """)
    findings = analyze_source(src, "t.py", codes=["MHA002"])
    # reported at the call that passes the mask (issue 26: where the fact enters the chain)
    assert [(f.code, f.line) for f in findings] == [("MHA002", 7)]
    assert findings[0].evidence["mask"]["line"] == 7
    assert findings[0].evidence["through"]["function"] == "attend"
    # inverting inside attend() would flip the mask for every other caller of it, and the
    # call's argument is the wrapper's, not SDPA's: no fix either way
    assert fix_source(src, findings) == (src, [])


# -- MHA102 ------------------------------------------------------------------------------------

def test_mha102_keeps_a_multi_line_call_layout_and_its_comments():
    src = """\
        import torch.nn as nn

        class Layer(nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = nn.MultiheadAttention(64, 8, batch_first=True)

            def forward(self, x, pad):
                out, _ = self.attn(
                    x,  # query
                    x,
                    x,
                    key_padding_mask=pad,  # True = padding
                )
                return out
        """
    assert fixed_text(src) == textwrap.dedent(src).replace(
        "key_padding_mask=pad,  # True = padding\n",
        "key_padding_mask=pad,  # True = padding\n            need_weights=False,\n")


def test_mha102_turns_a_literal_true_to_false():
    src = """\
        import torch.nn as nn
        attn = nn.MultiheadAttention(64, 8, batch_first=True)
        def f(x):
            return attn(x, x, x, need_weights = True)[0]
        """
    assert fixed_text(src).splitlines()[3] == "    return attn(x, x, x, need_weights = False)[0]"


# -- MHA007 ------------------------------------------------------------------------------------

MODULE_HEAD = """\
import torch.nn as nn
import torch.nn.functional as F

class Attn(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.drop = nn.Dropout(p)
        self.p = p

    def forward(this, q, k, v):
"""


@pytest.mark.parametrize("call, expected", [
    ("F.scaled_dot_product_attention(q, k, v, dropout_p=this.p)",
     "F.scaled_dot_product_attention(q, k, v, dropout_p=this.p if this.training else 0.0)"),
    ("F.scaled_dot_product_attention(q, k, v, None, this.p)",
     "F.scaled_dot_product_attention(q, k, v, None, this.p if this.training else 0.0)"),
    ("F.scaled_dot_product_attention(q, k, v, dropout_p=this.drop)",
     "F.scaled_dot_product_attention(q, k, v, dropout_p=this.drop.p if this.training else 0.0)"),
    ("F.scaled_dot_product_attention(q, k, v, dropout_p=0.1)",
     "F.scaled_dot_product_attention(q, k, v, dropout_p=0.1 if this.training else 0.0)"),
])
def test_mha007_gates_dropout_on_the_methods_own_self(call, expected):
    src = MODULE_HEAD + f"        return {call}\n"
    new, fixed = fix(src)
    assert [f.code for f in fixed] == ["MHA007"]
    assert new == MODULE_HEAD + f"        return {expected}\n"
    assert codes_after(new) == []


# -- MHA006 ------------------------------------------------------------------------------------

SDPA_HEAD = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

def attend(q, k, v, L):
"""


@pytest.mark.parametrize("lines", [
    ["    causal = torch.ones(L, L, dtype=torch.bool, device=q.device).tril()",
     "    return F.scaled_dot_product_attention(q, k, v, attn_mask=causal, is_causal=True)"],
    ["    causal = torch.tril(torch.ones(L, L, dtype=torch.bool))",
     "    return F.scaled_dot_product_attention(q, k, v, causal, is_causal=True)"],
    ["    causal = torch.ones(L, L).bool().tril(diagonal=0).to(q.device)",
     "    return F.scaled_dot_product_attention(q, k, v, attn_mask=causal, is_causal=True)"],
    ["    m = nn.Transformer.generate_square_subsequent_mask(L)",
     "    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=True, scale=None)"],
])
def test_mha006_drops_is_causal_when_the_mask_is_the_causal_mask(lines):
    src = SDPA_HEAD + "\n".join(lines) + "\n"
    new, fixed = fix(src)
    assert [f.code for f in fixed] == ["MHA006"]
    assert new == src.replace(", is_causal=True", "")
    assert codes_after(new) == []


@pytest.mark.parametrize("mask", [
    "torch.ones(L, L, dtype=torch.bool).triu(1)",          # the other triangle
    "torch.ones(L, L, dtype=torch.bool).tril(-1)",         # another diagonal
    "torch.ones(L, L).tril()",                             # a float 0/1 mask is added, not applied
    "torch.ones(L, 2 * L, dtype=torch.bool).tril()",       # not square
    "torch.ones(L, L, dtype=torch.bool).tril().to(torch.float32)",  # dtype changes meaning
    "pad_mask",                                            # unknown
])
def test_mha006_leaves_every_other_mask_alone(mask):
    src = SDPA_HEAD + f"    pad_mask = q.new_ones(L)\n    m = {mask}\n" \
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=True)\n"
    findings = analyze_source(src, "t.py", codes=["MHA006"])
    assert [f.code for f in findings] == ["MHA006"]
    assert fix_source(src, findings) == (src, [])


def test_mha006_rule_example_is_ambiguous_so_not_fixed():
    for example in REGISTRY["MHA006"].INVALID:
        findings = analyze_source(example.source, "ex.py", codes=["MHA006"])
        assert findings and fix_source(example.source, findings) == (example.source, [])


# -- every fixture ---------------------------------------------------------------------------

def _fixture_files():
    return sorted((ROOT / "fixtures").glob("*.py"))


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: p.name)
def test_fixing_a_fixture_removes_exactly_the_fixed_findings(path):
    from collections import Counter

    src = path.read_text(encoding="utf-8")
    codes = sorted(c for c in REGISTRY if c != "MHA000")
    before = analyze_source(src, path.name, codes=codes)
    new, fixed = fix_source(src, before)
    if not fixed:
        assert new == src
        return
    ast.parse(new)
    after = analyze_source(new, path.name, codes=codes)
    expected = Counter(f.code for f in before) - Counter(f.code for f in fixed)
    # MHA903's fix writes the explicit batch_first=False that the opposite opt-in
    # preference, MHA902, reports: each fixed MHA903 becomes one MHA902
    expected += Counter("MHA902" for f in fixed if f.code == "MHA903")
    assert Counter(f.code for f in after) == expected


# -- through the command line --------------------------------------------------------------------

FIXED_BAD_MODEL = (DATA / "bad_model.py").read_text(encoding="utf-8").replace(
    "out, _ = self.attn(x, x, x)", "out, _ = self.attn(x, x, x, need_weights=False)").replace(
    "attn_mask=causal, is_causal=True)", "attn_mask=causal)").replace(
    "dropout_p=self.p)", "dropout_p=self.p if self.training else 0.0)")


@pytest.fixture
def work(tmp_path):
    shutil.copy(DATA / "bad_model.py", tmp_path / "bad_model.py")
    shutil.copy(DATA / "good_model.py", tmp_path / "good_model.py")
    return tmp_path


def test_fix_rewrites_the_file_and_reports_what_is_left(work):
    proc = run("check", "--fix", "bad_model.py", "good_model.py", cwd=work)
    assert (work / "bad_model.py").read_text(encoding="utf-8") == FIXED_BAD_MODEL
    assert proc.stdout.splitlines() == [
        "bad_model.py:10:21: MHA001 MultiheadAttention built without batch_first: (N, L, E) "
        "input silently mixes samples across the batch"]
    assert proc.stderr.splitlines() == ["flake8-mha: fixed 3 findings in 1 file"]
    assert proc.returncode == 1
    # a second run has nothing left to fix
    again = run("check", "--fix", "--ignore", "MHA001", "bad_model.py", cwd=work)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")


def test_diff_shows_the_fix_and_changes_nothing(work):
    before = (work / "bad_model.py").read_bytes()
    proc = run("check", "--diff", "bad_model.py", "good_model.py", cwd=work)
    assert (work / "bad_model.py").read_bytes() == before
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "--- bad_model.py",
        "+++ bad_model.py",
        "@@ -11,9 +11,9 @@",
        "         self.p = p",
        " ",
        "     def forward(self, x, q, k, v):",
        "-        out, _ = self.attn(x, x, x)",
        "+        out, _ = self.attn(x, x, x, need_weights=False)",
        "         L = q.size(-2)",
        "         causal = torch.ones(L, L, dtype=torch.bool, device=q.device).tril()",
        "-        y = F.scaled_dot_product_attention(q, k, v, attn_mask=causal, is_causal=True)",
        "-        z = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p)",
        "+        y = F.scaled_dot_product_attention(q, k, v, attn_mask=causal)",
        "+        z = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training "
        "else 0.0)",
        "         return out, y, z",
    ]
    clean = run("check", "--diff", "good_model.py", cwd=work)
    assert (clean.returncode, clean.stdout) == (0, "")


def test_diff_applies_with_patch(work, tmp_path):
    if shutil.which("patch") is None:
        pytest.skip("patch(1) is not installed")
    proc = run("check", "--diff", "bad_model.py", cwd=work)
    subprocess.run(["patch", "-p0", "-s"], input=proc.stdout, text=True, cwd=work, check=True)
    assert (work / "bad_model.py").read_text(encoding="utf-8") == FIXED_BAD_MODEL


def test_fix_respects_noqa_and_select(work):
    src = (work / "bad_model.py").read_text(encoding="utf-8")
    src = src.replace("out, _ = self.attn(x, x, x)", "out, _ = self.attn(x, x, x)  # noqa: MHA102")
    (work / "bad_model.py").write_text(src, encoding="utf-8")
    run("check", "--fix", "--ignore", "MHA007", "bad_model.py", cwd=work)
    new = (work / "bad_model.py").read_text(encoding="utf-8")
    assert "self.attn(x, x, x)  # noqa: MHA102" in new
    assert "dropout_p=self.p)" in new
    assert "attn_mask=causal)" in new


def test_fix_keeps_encoding_bom_and_line_endings(tmp_path):
    src = (DATA / "bad_model.py").read_text(encoding="utf-8").replace("\n", "\r\n")
    src = src.replace('"""A small', '"""Ünïcode: a small')
    (tmp_path / "m.py").write_bytes(b"\xef\xbb\xbf" + src.encode("utf-8"))
    run("check", "--fix", "m.py", cwd=tmp_path)
    data = (tmp_path / "m.py").read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    text = data[3:].decode("utf-8")
    assert "\r\n" in text and "\n" not in text.replace("\r\n", "")
    assert "need_weights=False" in text and "Ünïcode" in text


def test_the_batch_first_fix_of_a_super_init_goes_in_the_init_call():
    # ``super()`` starts where ``super().__init__(...)`` starts: the keyword goes
    # in the call that builds the module, never in ``super()``
    src = textwrap.dedent(
        """\
        import torch.nn as nn


        class Cached(nn.MultiheadAttention):
            def __init__(self, d, h):
                super().__init__(d, h)
                self.cache = None


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = Cached(64, 8)

            def forward(self, x):
                x = x.transpose(0, 1)  # (B, L, E) -> (L, B, E)
                return self.attn(x, x, x, need_weights=False)[0]
        """
    )
    found = analyze_source(src, "m.py", codes=["MHA903"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA903", 6, 9)]
    new, fixed = fix_source(src, found)
    assert len(fixed) == 1
    assert "        super().__init__(d, h, batch_first=False)\n" in new
    assert analyze_source(new, "m.py", codes=["MHA903"]) == []
