"""Grouped-query attention (issue 18): MHA013, MHA014, MHA904.

Findings with exact (code, line, col) through the engine and through a real
flake8 process; the silent traps (beams, sequence axes, multi-query, tensors
that are not keys or values); the evidence a witness reads; ``explain``; and
the witnesses on real torch (TORCH_FACTS item 18).
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from fixture_expect import ROOT
from flake8_mha.lint.engine import analyze_source, select_codes

GQA = ["MHA013", "MHA014", "MHA904"]
FIX13 = ROOT / "fixtures" / "MHA013_gqa_repeat_grouping.py"
FIX14 = ROOT / "fixtures" / "MHA014_gqa_heads_do_not_divide.py"
FIX904 = ROOT / "fixtures" / "MHA904_gqa_repeat_tiling.py"


def found(source: str, codes=GQA, prefilter: bool = True):
    text = textwrap.dedent(source)
    return [(f.code, f.line, f.col) for f in analyze_source(text, "t.py", codes, use_prefilter=prefilter)]


def findings(source: str, codes=GQA):
    return analyze_source(textwrap.dedent(source), "t.py", codes)


# ------------------------------------------------------------------ fixtures

def test_mha013_fixture_exact_findings():
    got = {(f.code, f.line, f.col) for f in analyze_source(FIX13.read_text(), str(FIX13), GQA)}
    tilings = {(29, 21), (56, 17), (57, 17), (68, 9), (92, 13)}
    assert got == {("MHA013", l, c) for l, c in tilings} | {("MHA904", l, c) for l, c in tilings}


def test_mha014_fixture_exact_findings():
    got = {(f.code, f.line, f.col) for f in analyze_source(FIX14.read_text(), str(FIX14), GQA)}
    assert got == {("MHA014", 28, 13), ("MHA014", 37, 12)}


def test_mha904_fixture_exact_findings_and_no_mha013_without_another_path():
    got = {(f.code, f.line, f.col) for f in analyze_source(FIX904.read_text(), str(FIX904), GQA)}
    assert got == {("MHA904", 31, 16), ("MHA904", 32, 18), ("MHA904", 40, 12), ("MHA904", 40, 53)}


def test_mha904_is_off_by_default_in_the_engine():
    assert "MHA904" not in select_codes()
    assert {"MHA013", "MHA014"} <= set(select_codes())
    got = analyze_source(FIX904.read_text(), str(FIX904), select_codes())
    assert got == []


# ------------------------------------------------------------------ positives

FUSED_AND_TILED = """\
import torch
import torch.nn.functional as F

def attend(q, k, v, n_rep, fused):
    if fused:
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    k = k.repeat(1, n_rep, 1, 1)
    v = torch.tile(v, (1, n_rep, 1, 1))
    return F.scaled_dot_product_attention(q, k, v)
"""


def test_tiling_beside_enable_gqa():
    assert found(FUSED_AND_TILED) == [("MHA013", 7, 9), ("MHA904", 7, 9),
                                      ("MHA013", 8, 9), ("MHA904", 8, 9)]


def test_tiling_beside_a_partial_of_sdpa_with_enable_gqa():
    # Jamba-style: the fused path is a partial of SDPA that groups (probe G)
    src = """\
    import functools

    import torch.nn.functional as F

    gqa_sdpa = functools.partial(F.scaled_dot_product_attention, enable_gqa=True)


    def attend(q, k, v, n_rep, fused):
        if fused:
            return gqa_sdpa(q, k, v)
        k = k.repeat(1, n_rep, 1, 1)
        return F.scaled_dot_product_attention(q, k, v)
    """
    assert found(src, ["MHA013"]) == [("MHA013", 11, 9)]
    assert found(src.replace("enable_gqa=True", "enable_gqa=False"), ["MHA013"]) == []
    assert found(src.replace("enable_gqa=True", "dropout_p=0.0"), ["MHA013"]) == []


def test_tiling_beside_repeat_interleave_on_the_head_axis():
    src = """\
    import torch

    def grouped(key_states, n_rep):
        return key_states.repeat_interleave(n_rep, dim=1)

    def tiled(value_states, n_rep):
        return value_states.repeat(1, n_rep, 1, 1)
    """
    assert found(src) == [("MHA013", 7, 12), ("MHA904", 7, 12)]


def test_beam_repeat_interleave_is_not_a_grouping_path():
    src = """\
    import torch

    def step(input_ids, k, num_beams, n_rep):
        input_ids = input_ids.repeat_interleave(num_beams, dim=0)
        return input_ids, k.repeat(1, n_rep, 1, 1)
    """
    assert found(src) == [("MHA904", 5, 23)]


def test_meta_llama_layout_heads_on_axis_2():
    # (bs, slen, n_kv_heads, head_dim): grouping inserts after axis 2, tiling repeats axis 2
    src = """\
    import torch

    def repeat_kv(x, n_rep):
        bs, slen, n_kv_heads, head_dim = x.shape
        return (x[:, :, :, None, :]
                .expand(bs, slen, n_kv_heads, n_rep, head_dim)
                .reshape(bs, slen, n_kv_heads * n_rep, head_dim))

    class Attention(torch.nn.Module):
        def forward(self, x, bsz, seqlen):
            xk = self.wk(x).view(bsz, seqlen, self.n_local_kv_heads, self.head_dim)
            keys = repeat_kv(xk, self.n_rep)
            values = xk.repeat(1, 1, self.n_rep, 1)
            return keys, values
    """
    assert found(src) == [("MHA013", 13, 18), ("MHA904", 13, 18)]


def test_cat_of_copies_is_tiling():
    src = """\
    import torch

    def expand(k, v, n_rep, cache, num_beams):
        k = torch.cat([k] * n_rep, dim=1)
        v = torch.cat([v for _ in range(n_rep)], dim=1)
        beams = torch.cat([cache] * num_beams, dim=0)
        kv = torch.cat([k, v], dim=1)
        return k, v, beams, kv
    """
    assert found(src) == [("MHA904", 4, 9), ("MHA904", 5, 9)]


def test_einops_tiling_over_a_tuple_of_keys_and_values():
    src = """\
    import torch
    from einops import repeat

    def expand(k, v, q, heads, kv_heads, h):
        k, v = tuple(repeat(t, "b kvh n d -> b (r kvh) n d", r=heads // kv_heads) for t in (k, v))
        q2, k2 = tuple(repeat(t, "b h ... -> b (r h) ...", r=2) for t in (q, k))
        k3 = repeat(k, "b h ... -> b (h r) ...", r=h // kv_heads)
        k4 = repeat(k, "b ... -> b h ...", h=heads)
        return k, v, q2, k2, k3, k4
    """
    assert found(src) == [("MHA013", 5, 18), ("MHA904", 5, 18)]
    (f,) = findings(src, ["MHA013"])
    assert f.evidence["other_path"]["line"] == 7 and f.evidence["via"] == "einops"


def test_rotary_helper_keeps_the_layout():
    src = """\
    import torch

    def forward(self, x, cos, sin, B, L):
        q = self.q_proj(x).view(B, L, self.num_heads, 64).transpose(1, 2)
        k = self.k_proj(x).view(B, L, self.num_kv_heads, 64).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        return k.repeat(1, 4, 1, 1)
    """
    assert found(src) == [("MHA904", 7, 12)]


def test_einops_rearrange_layout_and_tiling():
    src = """\
    import torch
    from einops import rearrange

    def forward(self, x):
        k = rearrange(self.to_k(x), "b n (h d) -> b h n d", h=self.kv_heads)
        return k.repeat(1, 2, 1, 1)
    """
    assert found(src) == [("MHA904", 6, 12)]


# ------------------------------------------------------------------ silent traps

TRAPS = {
    "beams_2d": "def f(input_ids, num_beams):\n    return input_ids.repeat(num_beams, 1)\n",
    "beams_3d": "def f(encoder_out, beam):\n    return encoder_out.repeat(beam, 1, 1)\n",
    "beams_kv_cache": "def f(k, num_beams):\n    return k.repeat(num_beams, 1, 1, 1)\n",
    "beams_literal_batch": "def f(k):\n    return k.repeat(4, 1, 1, 1)\n",
    "beams_expand": ("def f(key, bsz, num_beams, L, D):\n"
                     "    return key[:, None].expand(bsz, num_beams, L, D).reshape(-1, L, D)\n"),
    "sequence_axis": "def f(k, seq_len):\n    return k.repeat(1, 1, seq_len, 1)\n",
    "sequence_by_layout": ("def f(x, B, L, n_rep):\n"
                           "    k = x.view(B, L, 2, 64).transpose(1, 2)\n"
                           "    k = x.view(B, L, self.n_kv_heads, 64)\n"
                           "    return k.repeat(1, n_rep, 1, 1)\n"),
    "head_dim_axis": "def f(k, n_rep):\n    return k.repeat(1, 1, 1, n_rep)\n",
    "not_kv": "def f(hidden, n_rep):\n    return hidden.repeat(1, n_rep, 1, 1)\n",
    "multi_query_factor": "def f(k, num_heads):\n    return k.repeat(1, num_heads, 1, 1)\n",
    "multi_query_layout": ("def f(x, B, L):\n"
                           "    k = x.view(B, L, 1, 64).transpose(1, 2)\n"
                           "    return k.repeat(1, 8, 1, 1)\n"),
    "literal_factor_no_layout": "def f(k):\n    return k.repeat(1, 4, 1, 1)\n",
    "two_axes": "def f(k, n_rep):\n    return k.repeat(1, n_rep, 2, 1)\n",
    "expand_not_merged": ("def f(k, b, n_rep, n_kv, s, d):\n"
                          "    return k[:, None].expand(b, n_rep, n_kv, s, d)\n"),
    "unknown_factor": "def f(k, times):\n    return k.repeat(1, times, 1, 1)\n",
    "key_mask": "def f(key_padding_mask, n_rep):\n    return key_padding_mask.repeat(1, n_rep, 1, 1)\n",
    # a repeat of a fresh singleton axis after the heads groups (n_kv, 1, L, D) -> (n_kv * n_rep, ...)
    "singleton_after_heads": ("def repeat_kv(x, n_rep):\n"
                              "    x = x.unsqueeze(1)\n"
                              "    x = x.repeat(1, n_rep, 1, 1)\n"
                              "    return x.view(1, -1, x.size(-2), x.size(-1))\n"),
    "expanded_then_cut": ("def f(tau_v, n_kv, groups):\n"
                          "    return tau_v.repeat(1, groups, 1, 1)[:, :n_kv]\n"),
}


@pytest.mark.parametrize("name", sorted(TRAPS))
def test_not_a_kv_head_tiling_stays_silent(name):
    src = ("import torch\nimport torch.nn.functional as F\n" + TRAPS[name]
           + "def g(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)\n")
    assert found(src, prefilter=False) == []


def test_repeat_of_a_new_axis_is_judged_by_its_side_of_the_heads():
    src = """\
    import torch

    def repeat_kv(x, n_rep):
        n_kv, L, D = x.shape
        x = x.unsqueeze(1)
        x = x.repeat(1, n_rep, 1, 1)
        return x.view(1, -1, L, D)

    def tiled(k, n_rep):
        b, n_kv_heads, L, D = k.shape
        k = k[:, None]
        k = k.repeat(1, n_rep, 1, 1, 1)
        return k.reshape(b, -1, L, D)
    """
    assert found(src) == [("MHA013", 12, 9), ("MHA904", 12, 9)]
    (f,) = findings(src, ["MHA013"])
    assert f.evidence["other_path"]["line"] == 6 and f.evidence["via"] == "repeat"


# Shapes met in public GQA code (paraphrased): an ONNX-export processor that
# tiles "because repeat_interleave is equivalent", a KV-offload retriever that
# tiles after adding a batch axis and groups 3-D (heads-first) tensors
# elsewhere, a processor that tiles a per-head scale and cuts it.
REAL_WORLD = """\
import torch

class ExportProcessor:
    def __call__(self, attn, hidden, ctx):
        b = hidden.shape[0]
        head_dim = attn.inner_dim // attn.heads
        key = attn.to_k(ctx).view(b, -1, attn.kv_heads, head_dim).transpose(1, 2)
        if attn.kv_heads != attn.heads:
            n_rep = attn.heads // attn.kv_heads
            key = key.repeat(1, n_rep, 1, 1)
        return key

def retrieve(cache, query, num_q_heads):
    n_rep = num_q_heads // cache.num_kv_heads
    keys_gpu, values_gpu = cache.get_subset()
    keys_gpu = keys_gpu.repeat(1, 1, 1)
    keys_gpu = keys_gpu.unsqueeze(0)
    keys_gpu = keys_gpu.repeat(1, n_rep, 1, 1)
    keys_all, values_all = cache.get()
    keys_union = keys_all.repeat_interleave(n_rep, dim=0)
    return keys_gpu, keys_union

def scale_values(tau_v, value_states, groups, n_kv):
    return value_states * tau_v.repeat(1, groups, 1, 1)[:, :n_kv]
"""


def test_real_world_shapes():
    # the heads-first 3-D grouping (dim=0) has no stated layout: not counted, so no MHA013
    assert found(REAL_WORLD) == [("MHA904", 10, 19), ("MHA904", 18, 16)]
    first = findings(REAL_WORLD, ["MHA904"])[0]
    assert first.evidence["head_axis_from"] == "layout"
    assert first.evidence["layout"] == ["b", "attn.kv_heads", "-1", "head_dim"]


def test_no_torch_import_stays_silent():
    src = "def attend(k, n_rep, enable_gqa=True):\n    return k.repeat(1, n_rep, 1, 1)\n"
    assert found(src, prefilter=False) == []


def test_good_groupings_alone_stay_silent():
    src = """\
    import torch
    import torch.nn.functional as F

    def repeat_kv(hidden_states, n_rep):
        batch, num_key_value_heads, slen, head_dim = hidden_states.shape
        hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
        return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)

    def attend(q, k, v, n_rep):
        a = F.scaled_dot_product_attention(q, repeat_kv(k, n_rep), repeat_kv(v, n_rep))
        b = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        return a + F.scaled_dot_product_attention(q, k.repeat_interleave(n_rep, dim=1), v)
    """
    assert found(src) == []


# ------------------------------------------------------------------ MHA014

SEED_STYLE = """\
import torch.nn as nn
import torch.nn.functional as F

H, H_KV = 12, 5

class SDPAAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.h, self.h_kv, self.d = H, H_KV, 64

    def forward(self, x):
        N, L, _ = x.shape
        q = self.q_proj(x).view(N, L, self.h, self.d).transpose(1, 2)
        k, v = self.kv_proj(x).view(N, L, 2, self.h_kv, self.d).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=self.h_kv != self.h)
"""


def test_mha014_seed_style_counts_from_constants():
    assert found(SEED_STYLE) == [("MHA014", 15, 16)]
    (f,) = findings(SEED_STYLE)
    assert f.evidence["num_heads"] == 12 and f.evidence["num_kv_heads"] == 5
    assert f.evidence["head_axis"] == 1
    assert f.evidence["layout"] == {"query": ["N", "self.h", "L", "self.d"],
                                       "key": ["N", "self.h_kv", "L", "self.d"]}
    lines = [d["line"] for d in f.evidence["decided_by"]]
    assert 13 in lines and 14 in lines and 15 in lines


def test_mha014_tensors_made_with_their_sizes():
    src = """\
    import torch
    import torch.nn.functional as F
    q = torch.randn(2, 7, 5, 16)
    k = torch.randn((2, 2, 5, 16), dtype=torch.float32)
    out = F.scaled_dot_product_attention(q, k, k, enable_gqa=True)
    ok = F.scaled_dot_product_attention(torch.randn(2, 8, 5, 16), k, k, enable_gqa=True)
    """
    assert found(src) == [("MHA014", 5, 7)]
    (f,) = findings(src)
    assert (f.evidence["num_heads"], f.evidence["num_kv_heads"]) == (7, 2)


@pytest.mark.parametrize("kv, gqa, want", [
    ("5", "True", [("MHA014", 6, 12)]),
    ("4", "True", []),           # 12 over 4 divides
    ("5", "False", []),          # no enable_gqa: a different error, not this rule
    ("5", "use_gqa", []),        # unknown flag
    ("n_kv", "True", []),        # unknown count
])
def test_mha014_counts_and_flag(kv, gqa, want):
    src = f"""\
    import torch.nn.functional as F
    def attend(x, B, L, n_kv, use_gqa):
        q = x.view(B, L, 12, 64).transpose(1, 2)
        k = x.view(B, L, {kv}, 64).transpose(1, 2)
        v = k
        return F.scaled_dot_product_attention(q, k, v, enable_gqa={gqa})
    """
    assert found(src) == want


# ------------------------------------------------------------------ evidence

def test_tiling_evidence_names_the_head_axis_counts_and_lines():
    src = """\
    import torch
    import torch.nn.functional as F
    N_HEADS, N_KV_HEADS = 8, 2

    def attend(q, x, B, L, fused):
        k = x.view(B, L, N_KV_HEADS, 16).transpose(1, 2)
        if fused:
            return F.scaled_dot_product_attention(q, k, k, enable_gqa=True)
        k = k.repeat(1, N_HEADS // N_KV_HEADS, 1, 1)
        return F.scaled_dot_product_attention(q, k, k)
    """
    (f,) = findings(src, ["MHA013"])
    assert (f.line, f.col) == (9, 9)
    ev = f.evidence
    assert (ev["head_axis"], ev["rank"], ev["num_kv_heads"], ev["n_rep"], ev["num_heads"]) == (1, 4, 2, 4, 8)
    assert ev["layout"] == ["B", "N_KV_HEADS", "L", "16"]
    assert ev["head_axis_from"] == "layout"
    assert [d["line"] for d in ev["decided_by"]] == [6, 6, 9]
    assert ev["other_path"] == {"via": "enable_gqa", "grouping": "group", "line": 8,
                                "code": "F.scaled_dot_product_attention(q, k, k, enable_gqa=True)"}
    assert json.loads(json.dumps(f.to_dict()))["evidence"] == ev  # JSON round trip


# ------------------------------------------------------------------ real flake8

_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>MHA\d{3}) ")


def _flake8(*args):
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    got = set()
    for line in proc.stdout.splitlines():
        m = _LINE.match(line)
        if m:
            got.add((os.path.basename(m["path"]), int(m["line"]), int(m["col"]), m["code"]))
    return proc.returncode, got


FILES = [str(p.relative_to(ROOT)) for p in (FIX13, FIX14, FIX904)]
F13, F14, F904 = (p.name for p in (FIX13, FIX14, FIX904))
WANT = ({(F13, l, c, "MHA013") for l, c in [(29, 21), (56, 17), (57, 17), (68, 9), (92, 13)]}
        | {(F14, 28, 13, "MHA014"), (F14, 37, 12, "MHA014")})
WANT_904 = ({(F13, l, c, "MHA904") for l, c in [(29, 21), (56, 17), (57, 17), (68, 9), (92, 13)]}
            | {(F904, 31, 16, "MHA904"), (F904, 32, 18, "MHA904"), (F904, 40, 12, "MHA904"),
               (F904, 40, 53, "MHA904")})


def test_real_flake8_select_the_three_codes():
    code, got = _flake8("--select", "MHA013,MHA014,MHA904", *FILES)
    assert code == 1
    assert got == WANT | WANT_904


def test_real_flake8_default_selection_leaves_mha904_off():
    code, got = _flake8(*FILES)
    assert code == 1
    assert {g for g in got if g[3] in GQA} == WANT


def test_real_flake8_enable_extensions_turns_mha904_on():
    _, got = _flake8("--enable-extensions", "MHA9", *FILES)
    assert {g for g in got if g[3] == "MHA904"} == WANT_904


def test_real_flake8_clean_file_exits_zero(tmp_path):
    path = tmp_path / "good.py"
    path.write_text(textwrap.dedent("""\
        import torch.nn.functional as F
        def attend(q, k, v, n_rep):
            k = k.repeat_interleave(n_rep, dim=1)
            return F.scaled_dot_product_attention(q, k, v.repeat(2, 1, 1, 1))
        """))
    code, got = _flake8("--select", "MHA", str(path))
    assert (code, got) == (0, set())


# ------------------------------------------------------------------ explain

@pytest.mark.parametrize("code, name", [("MHA013", "gqa-repeat-grouping"),
                                        ("MHA014", "gqa-heads-do-not-divide"),
                                        ("MHA904", "gqa-repeat-tiling")])
def test_explain(code, name):
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", "explain", code.lower()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"# {code}: {name}\n")
    assert "## Scope decisions" in proc.stdout
    assert "## What the confirmer measures" in proc.stdout
    assert (ROOT / "docs" / "rules" / f"{code}.md").read_text(encoding="utf-8") == proc.stdout


# ------------------------------------------------------------------ witnesses (real torch)

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="torch is not installed (pip install 'flake8-mha[confirm]')")


@needs_torch
def test_tiling_witness_measures_the_fact_18_difference():
    from flake8_mha.confirm.witnesses import CONFIRMED, WITNESSES

    for code in ("MHA013", "MHA904"):
        res = WITNESSES[code].run({"num_kv_heads": 2, "n_rep": 4, "head_axis": 1})
        assert res["verdict"] == CONFIRMED
        assert res["measured"]["max_difference"] == pytest.approx(2.735, abs=1e-3)
        assert res["measured"]["interleave_vs_enable_gqa"] == 0.0
        assert (res["measured"]["num_heads"], res["measured"]["num_kv_heads"]) == (8, 2)
        assert not any("num_kv_heads" in a or "n_rep" in a for a in res["assumed"])


@needs_torch
def test_tiling_witness_says_what_it_assumed():
    from flake8_mha.confirm.witnesses import CONFIRMED, WITNESSES

    res = WITNESSES["MHA013"].run({"head_axis": 1})
    assert res["verdict"] == CONFIRMED
    assert any("num_kv_heads and n_rep unknown" in a for a in res["assumed"])
    res = WITNESSES["MHA013"].run({"n_rep": 3})
    assert (res["measured"]["num_heads"], res["measured"]["num_kv_heads"]) == (6, 2)
    assert any("num_kv_heads unknown: used 2" in a for a in res["assumed"])


@needs_torch
def test_tiling_witness_one_kv_head_is_not_reproduced():
    from flake8_mha.confirm.witnesses import NOT_REPRODUCED, WITNESSES

    res = WITNESSES["MHA904"].run({"num_kv_heads": 1, "n_rep": 8})
    assert res["verdict"] == NOT_REPRODUCED
    assert res["measured"]["max_difference"] == 0.0


@needs_torch
@pytest.mark.parametrize("heads, kv", [(12, 5), (7, 2)])
def test_mha014_witness_reports_the_exact_exception(heads, kv):
    from flake8_mha.confirm.witnesses import CONFIRMED, WITNESSES

    res = WITNESSES["MHA014"].run({"num_heads": heads, "num_kv_heads": kv})
    assert res["verdict"] == CONFIRMED
    assert res["measured"]["exception"] == (
        "RuntimeError: Number of heads in key and value must divide the number of heads in")


@needs_torch
def test_mha014_witness_dividing_counts_and_unknown_counts():
    from flake8_mha.confirm.witnesses import NOT_REPRODUCED, SKIPPED, WITNESSES

    assert WITNESSES["MHA014"].run({"num_heads": 12, "num_kv_heads": 4})["verdict"] == NOT_REPRODUCED
    res = WITNESSES["MHA014"].run({"num_heads": 12})
    assert res["verdict"] == SKIPPED and "num_kv_heads" in res["reason"]


@needs_torch
def test_confirm_cli_confirms_every_gqa_fixture_finding(tmp_path):
    out = tmp_path / "c.json"
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", "confirm", "--select", "MHA",
                           "--json", str(out), "--no-progress", *FILES],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr
    results = json.loads(out.read_text())["results"]
    gqa = [r for r in results if r["code"] in GQA]
    assert len(gqa) == len(WANT | WANT_904)
    assert {r["verdict"] for r in gqa} == {"CONFIRMED"}
    by_line = {(os.path.basename(r["path"]), r["line"], r["code"]): r for r in gqa}
    assert by_line[(F13, 68, "MHA013")]["measured"]["num_kv_heads"] == 2  # from the constants
    assert by_line[(F14, 28, "MHA014")]["measured"]["num_heads"] == 12
