"""The thirty-ninth stop.  Issue 26: what probe AM left open across files,
and what probe AN and release review 40 found."""

from __future__ import annotations

from fixture_expect import source_rows as _rows, write_package
from flake8_mha.lint.engine import analyze_file

TRACED = """\
import torch.nn as nn


class Traced(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.inner = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, *args, **kwargs):
        return self.inner(*args, **kwargs)
"""

LAYER = """\
import torch.nn as nn

from .trace import Traced


class Layer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.mixer = Traced(dim, heads)

    def forward(self, x, pad):
        out, _ = self.mixer(x, x, x, key_padding_mask=pad)
        return x + out
"""


def _traced(tmp_path, layer):
    pkg = write_package(tmp_path / "pkg", {"trace.py": TRACED, "layer.py": layer})
    found = analyze_file(str(pkg / "trace.py"), ["MHA102"])
    return [(f.line, f.col, f.code) for f in found], found


def test_a_tracing_wrapper_of_another_file_hands_its_callers_the_weights(tmp_path):
    # probe AM's AM30 across files: ``forward(self, *args, **kwargs)``
    rows, found = _traced(tmp_path, LAYER)
    assert rows == [(10, 16, "MHA102")]
    assert "every caller of `Traced.forward` (pkg/layer.py line 12)" in found[0].message
    # the layer's own file says nothing: the finding is the wrapper's
    assert analyze_file(str(tmp_path / "pkg" / "layer.py"), ["MHA102"]) == []


def test_a_tracing_wrapper_whose_caller_decides_the_weights_is_silent(tmp_path):
    by_keyword = LAYER.replace("key_padding_mask=pad)", "key_padding_mask=pad, need_weights=False)")
    assert _traced(tmp_path / "a", by_keyword)[0] == []
    by_place = LAYER.replace(
        "self.mixer(x, x, x, key_padding_mask=pad)", "self.mixer(x, x, x, pad, False)"
    )
    assert _traced(tmp_path / "b", by_place)[0] == []
    read = LAYER.replace("out, _ = self.mixer", "out, w = self.mixer").replace(
        "return x + out", "return x + out, w.mean()"
    )
    assert _traced(tmp_path / "c", read)[0] == []


def test_a_tracing_wrapper_in_the_same_file_is_reported_once_at_its_caller(tmp_path):
    same = TRACED + "\n\n" + LAYER.split("from .trace import Traced\n\n\n")[1]
    assert _rows(same, ["MHA102"], tmp_path) == [(19, 18, "MHA102")]


MAPPED = """\
import torch
import torch.nn as nn


def run():
    num_heads, input_dim, batch_size, q_len = 8, 256, 32, 20
    q = torch.randn(batch_size, q_len, input_dim)
    attention = nn.MultiheadAttention(input_dim, num_heads)
    permute = lambda t: t.permute(1, 0, 2)
    qt, kt, vt = map(permute, [q, q, q])
    return attention(qt, kt, vt, need_weights=False)[0]
"""


def test_an_axis_swap_in_a_lambda_mapped_over_the_inputs_is_their_conversion(tmp_path):
    # release review 40's carefree-learn test: ``map(permute, [q, k, v])``
    assert _rows(MAPPED, ["MHA001"], tmp_path) == []
    rows = analyze_file_rows(MAPPED, ["MHA903"], tmp_path)
    assert rows == [(8, 17, "MHA903", "line 10: `map(permute, [q, q, q])`")]
    # no swap: the batch-first data reaches the module
    kept = MAPPED.replace("lambda t: t.permute(1, 0, 2)", "lambda t: t.contiguous()")
    assert _rows(kept, ["MHA001"], tmp_path) == [(8, 17, "MHA001")]
    called = MAPPED.replace("qt, kt, vt = map(permute, [q, q, q])", "qt = kt = vt = permute(q)")
    assert _rows(called, ["MHA001"], tmp_path) == []
    inline = MAPPED.replace("map(permute, [q, q, q])", "(t.transpose(0, 1) for t in (q, q, q))")
    assert _rows(inline, ["MHA001"], tmp_path) == []


def analyze_file_rows(source, codes, tmp_path):
    path = tmp_path / "m.py"
    path.write_text(source)
    found = analyze_file(str(path), codes)
    return [
        (f.line, f.col, f.code, f.message.split("(L, N, ?), ")[1].split("): ")[0]) for f in found
    ]


def test_a_name_with_an_x_in_it_is_one_axis_of_a_spaced_shape_comment():
    from flake8_mha.analysis.layout.domain import parse_shape_comment

    # release review 40's pororo: ``# bsz x max_pos`` is two axes, not three
    assert parse_shape_comment("# bsz x max_pos") == {None: ("batch", None)}
    assert parse_shape_comment("# max_len x bsz x embed_dim") == {None: ("seq", "batch", "embed")}
    assert parse_shape_comment("# BxTxC") == {None: ("batch", "seq", "channel")}


SWARM = """\
import torch
import torch.nn as nn


class Swarmulator:
    def __init__(self, D=3, heads=4, N=100, batch_size=8):
        self.xi = torch.randn(N, D)
        self.oi = torch.randn(N, D)
        self.oi /= torch.norm(self.oi, dim=1).unsqueeze(1)
        self.attention_xi = nn.MultiheadAttention(embed_dim=D, num_heads=heads)
        self.attention_oi = nn.MultiheadAttention(embed_dim=D, num_heads=heads)

    def evolution_of_xi(self):
        attn_output, _ = self.attention_xi(self.xi, self.xi, self.xi, need_weights=False)
        return attn_output

    def evolution_of_oi(self):
        attn_output, _ = self.attention_oi(self.oi, self.oi, self.oi, need_weights=False)
        return attn_output

    def RK4_step(self, y, evolution_func, dt=0.01):
        k1 = dt * evolution_func()
        k2 = dt * evolution_func()
        return y + (k1 + k2) / 2

    def simulation(self, num_steps=1000):
        for _ in range(num_steps):
            self.xi = self.RK4_step(self.xi, self.evolution_of_xi)
            self.oi = self.RK4_step(self.oi, self.evolution_of_oi)
            self.oi /= torch.norm(self.oi, dim=1).unsqueeze(1)
"""


def test_an_unbatched_state_stepped_by_a_helper_handed_its_update_stays_unbatched(tmp_path):
    # review 39's swarmalator as released: an RK4 step handed the bound method
    # that runs the attention, and the state normalised in place
    assert _rows(SWARM, ["MHA001"], tmp_path) == []
    batched = SWARM.replace(
        "self.xi = torch.randn(N, D)", "self.xi = torch.randn(batch_size, N, D)"
    )
    assert _rows(batched, ["MHA001"], tmp_path) == [(10, 29, "MHA001")]
    oi_batched = SWARM.replace(
        "self.oi = torch.randn(N, D)", "self.oi = torch.randn(batch_size, N, D)"
    )
    assert _rows(oi_batched, ["MHA001"], tmp_path) == [(11, 29, "MHA001")]


BRANCHED = """\
import torch.nn.functional as F

FAST = False

if FAST:
    from torch.library import custom_op

    @custom_op("pkg::_sdpa", mutates_args=())
    def _sdpa(q, k, v, attn_mask=None, dropout_p=0.0):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)

else:

    def _sdpa(q, k, v, attn_mask=None, dropout_p=0.0):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)
"""

BLOCK = """\
import torch.nn as nn

from .kernels import _sdpa


class Block(nn.Module):
    def __init__(self, p=0.1):
        super().__init__()
        self.p = p

    def forward(self, q, k, v):
        return _sdpa(q, k, v, dropout_p=self.p)
"""


def test_a_function_defined_in_each_branch_of_an_if_is_followed(tmp_path):
    # review 39's eole as released: ``_sdpa`` a custom op under ``if``, plain in ``else``
    pkg = write_package(tmp_path / "pkg", {"kernels.py": BRANCHED, "block.py": BLOCK})
    found = analyze_file(str(pkg / "block.py"), ["MHA007"])
    assert [(f.line, f.col, f.code) for f in found] == [(12, 16, "MHA007")]
    assert "pkg/kernels.py:15 through _sdpa()" in found[0].message
    # the branches differ (one gates its dropout): unknown, silent
    (pkg / "kernels.py").write_text(
        BRANCHED.replace(
            "attn_mask=attn_mask, dropout_p=dropout_p)\n\nelse:",
            "attn_mask=attn_mask, dropout_p=0.0)\n\nelse:",
        )
    )
    assert analyze_file(str(pkg / "block.py"), ["MHA007"]) == []
