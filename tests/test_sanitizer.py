"""The runtime sanitizer, with real torch calls on the CPU."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from flake8_mha.sanitizer import SanitizerError, sanitize  # noqa: E402

TOKENS = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, 0, 0]])  # sample 1 padded with id 0
KEEP = TOKENS != 0  # tokenizer convention: True = real token
IGNORE = TOKENS == 0  # MHA convention: True = padding


@pytest.fixture
def mha():
    torch.manual_seed(0)
    return nn.MultiheadAttention(16, 4, batch_first=True)


@pytest.fixture
def x():
    torch.manual_seed(1)
    return torch.randn(2, 5, 16)


def codes(session):
    return sorted(r.code for r in session.reports)


def test_wrappers_are_installed_only_while_active():
    before = (nn.MultiheadAttention.forward, F.scaled_dot_product_attention,
              nn.TransformerEncoderLayer.forward)
    with sanitize():
        assert getattr(nn.MultiheadAttention.forward, "__flake8_mha_wrapped__", False)
        assert getattr(F.scaled_dot_product_attention, "__flake8_mha_wrapped__", False)
        with sanitize():  # nested sessions share the wrappers
            pass
        assert getattr(nn.MultiheadAttention.forward, "__flake8_mha_wrapped__", False)
    after = (nn.MultiheadAttention.forward, F.scaled_dot_product_attention,
             nn.TransformerEncoderLayer.forward)
    assert before == after


def test_correct_calls_report_nothing(mha, x):
    q = torch.randn(2, 2, 5, 8)
    with sanitize() as s:
        mha(x, x, x, key_padding_mask=IGNORE, need_weights=False)
        mha(x, x, x, key_padding_mask=~KEEP.bool())
        causal = nn.Transformer.generate_square_subsequent_mask(5)
        mha(x, x, x, attn_mask=causal, is_causal=True)
        F.scaled_dot_product_attention(q, q, q, attn_mask=KEEP[:, None, None, :])
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
        F.scaled_dot_product_attention(q, q, q, dropout_p=0.1)  # training-time call, grad on
        layer = nn.TransformerEncoderLayer(16, 4, batch_first=True, dropout=0.0)
        layer(x, src_key_padding_mask=IGNORE)
    assert s.reports == []


def test_keep_mask_given_as_key_padding_mask(mha, x):
    with sanitize() as s:
        out, _ = mha(x, x, x, key_padding_mask=KEEP)
    assert codes(s) == ["MHA003", "MHA011"]
    by = {r.code: r for r in s.reports}
    assert "row 1 the last 2 of 5 keys are False" in by["MHA003"].message
    assert by["MHA011"].message.startswith("row 0 of batch item 0: all 5 keys masked")
    assert torch.isnan(out[0]).all()  # what MHA011 warned about
    assert by["MHA003"].filename == __file__


def test_ignore_mask_given_to_sdpa():
    q = torch.randn(2, 2, 5, 8)
    with sanitize() as s:
        out = F.scaled_dot_product_attention(q, q, q, attn_mask=IGNORE[:, None, None, :])
    assert codes(s) == ["MHA002", "MHA011"]
    assert (out[0] == 0).all()  # SDPA gives zeros for the fully masked sample


def test_float_01_and_integer_masks(mha, x):
    with sanitize() as s:
        mha(x, x, x, key_padding_mask=IGNORE.float())
    assert codes(s) == ["MHA004"]
    assert "float32 mask holding only 0 and 1" in s.reports[0].message
    with sanitize() as s:
        with pytest.raises(AssertionError):
            mha(x, x, x, key_padding_mask=IGNORE.long())
    assert codes(s) == ["MHA004"]
    assert "integer (int64)" in s.reports[0].message


def test_additive_float_mask_is_fine(mha, x):
    additive = torch.zeros(2, 5).masked_fill(IGNORE, float("-inf"))
    with sanitize() as s:
        mha(x, x, x, key_padding_mask=additive)
    assert s.reports == []


def test_is_causal_ignored_on_the_fastpath(mha, x):
    mha.eval()
    with sanitize() as s, torch.no_grad():
        mha(x, x, x, is_causal=True, need_weights=False)
    assert codes(s) == ["MHA005"]


def test_is_causal_in_training_raises_in_torch_and_is_not_reported(mha, x):
    with sanitize() as s:
        with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
            mha(x, x, x, is_causal=True)
    assert s.reports == []


class _Attn(nn.Module):
    def __init__(self, gated: bool):
        super().__init__()
        self.gated = gated

    def forward(self, q):
        p = 0.1 if (self.training or not self.gated) else 0.0
        return F.scaled_dot_product_attention(q, q, q, dropout_p=p)


def test_sdpa_dropout_in_eval_and_gated():
    q = torch.randn(2, 2, 5, 8)
    with sanitize() as s:
        _Attn(gated=False).eval()(q)
    assert codes(s) == ["MHA007"]
    assert "in eval mode" in s.reports[0].message
    with sanitize() as s, torch.no_grad():
        _Attn(gated=True).eval()(q)
        _Attn(gated=True).train()(q)  # no_grad but p=0.1 in training: reported as no_grad
    assert codes(s) == ["MHA007"]
    assert "gradients are disabled" in s.reports[0].message


def test_batch_first_input_to_sequence_first_module(x):
    torch.manual_seed(0)
    seq_first = nn.MultiheadAttention(16, 4)
    with sanitize() as s:
        with pytest.raises(Exception):
            seq_first(x, x, x, key_padding_mask=IGNORE)  # (N=2, L=5, E) read as (L=2, N=5)
    assert "MHA001" in codes(s)
    with sanitize() as s:
        ok = x.transpose(0, 1)
        seq_first(ok, ok, ok, key_padding_mask=IGNORE)
    assert s.reports == []


def test_transformer_layer_masks_are_checked_once(x):
    layer = nn.TransformerEncoderLayer(16, 4, batch_first=True, dropout=0.0)
    with sanitize() as s:
        layer(x, src_key_padding_mask=KEEP)
    assert codes(s) == ["MHA003", "MHA011"]


def test_raise_mode_stops_at_the_first_report(mha, x):
    with pytest.raises(SanitizerError, match="MHA004"):
        with sanitize(mode="raise"):
            mha(x, x, x, key_padding_mask=IGNORE.float())
    assert not getattr(nn.MultiheadAttention.forward, "__flake8_mha_wrapped__", False)


def test_sessions_in_threads_restore_cleanly(mha, x):
    errors = []

    def work():
        try:
            for _ in range(20):
                with sanitize() as s:
                    mha(x, x, x, key_padding_mask=IGNORE.float())
                assert "MHA004" in codes(s)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert not getattr(nn.MultiheadAttention.forward, "__flake8_mha_wrapped__", False)


def test_decorator_form(mha, x):
    deco = sanitize()

    @deco
    def step():
        return mha(x, x, x, key_padding_mask=IGNORE.float())

    step()
    assert codes(deco) == ["MHA004"]


USER_TEST = textwrap.dedent("""
    import torch, torch.nn as nn
    def test_model():
        mha = nn.MultiheadAttention(8, 2, batch_first=True)
        x = torch.randn(2, 3, 8)
        mask = torch.tensor([[1, 1, 1], [1, 1, 0]]).float()
        mha(x, x, x, key_padding_mask=mask)
""")


@pytest.mark.parametrize("args,rc,expect", [
    (["-p", "flake8_mha.sanitizer"], 0, "MHA004 nn.MultiheadAttention: key_padding_mask is a float32"),
    (["--mha-sanitize"], 0, "MHA004 nn.MultiheadAttention"),
    (["--mha-sanitize", "--mha-sanitize-mode", "raise"], 1, "SanitizerError"),
    ([], 0, None),
])
def test_pytest_plugin(tmp_path, args, rc, expect):
    (tmp_path / "test_user.py").write_text(USER_TEST)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args,
                           "test_user.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == rc, proc.stdout + proc.stderr
    if expect is None:
        assert "flake8-mha sanitizer" not in proc.stdout
    else:
        assert expect in proc.stdout
        assert "test_user.py:7: MHA004" in proc.stdout
