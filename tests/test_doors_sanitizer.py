"""Issue 28, item 6: the sanitizer blames the user's call, not the shared
helper it went through.  A real pytest subprocess runs the tests of a small
multi-file package under ``--mha-sanitize``."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))

FILES = {
    "mypkg/__init__.py": "",
    # a shared helper: it only passes the mask on (line 5 calls torch)
    "mypkg/attn.py": """\
        import torch.nn.functional as F


        def attend(q, k, v, mask, p=0.0):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)


        def attend_eval(q, k, v, mask, p=0.5):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        """,
    # a layer that forwards the mask, and two models that decide it
    "mypkg/model.py": """\
        import torch
        from torch import nn

        from .attn import attend, attend_eval


        class Block(nn.Module):
            def forward(self, x, mask):
                return attend(x, x, x, mask)


        class Padded(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()

            def forward(self, x, lengths):
                pad = torch.arange(x.shape[-2])[None, :] >= lengths[:, None]
                return self.block(x, pad[:, None, None, :])


        class Keep(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()

            def forward(self, x, lengths):
                keep = torch.arange(x.shape[-2])[None, :] < lengths[:, None]
                return self.block(x, keep[:, None, None, :])


        def infer(x):
            with torch.no_grad():
                return attend_eval(x, x, x, None)
        """,
    "test_models.py": """\
        import torch

        from mypkg.attn import attend
        from mypkg.model import Keep, Padded, infer

        X = torch.randn(2, 1, 5, 8)
        LENGTHS = torch.tensor([5, 3])


        def test_padded():
            Padded()(X, LENGTHS)


        def test_keep():
            Keep()(X, LENGTHS)


        def test_direct():
            bad = torch.tensor([[0, 0, 0, 0, 0], [0, 0, 0, 1, 1]]).bool()
            attend(X, X, X, bad[:, None, None, :])


        def test_infer():
            infer(X)
        """,
}


def test_reports_name_the_deciding_call_and_the_helper(tmp_path):
    for rel, text in FILES.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--mha-sanitize",
         "test_models.py"], cwd=tmp_path, capture_output=True, text=True, env=ENV, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [ln.strip() for ln in proc.stdout.splitlines() if ": MHA" in ln]
    model = str(tmp_path / "mypkg" / "model.py")
    attn = str(tmp_path / "mypkg" / "attn.py")
    test = str(tmp_path / "test_models.py")
    reaches = "the call reaches scaled_dot_product_attention at"
    # the model that built the padding mask, past Block.forward and attend()
    padded = [ln for ln in lines if ln.startswith(f"{model}:19: MHA002 ")]
    assert len(padded) == 1 and padded[0].endswith(f"; {reaches} {attn}:5"), lines
    # the test that built a bad mask and called the helper itself
    direct = [ln for ln in lines if ln.startswith(f"{test}:20: MHA002 ")]
    assert len(direct) == 1 and direct[0].endswith(f"; {reaches} {attn}:5"), lines
    # a flag the helper decided (its own default) stays with the helper
    dropout = [ln for ln in lines if " MHA007 " in ln]
    assert len(dropout) == 1 and dropout[0].startswith(f"{attn}:9: MHA007 "), lines
    assert reaches not in dropout[0]
    # nothing is blamed on the helper's line for the masks, nor on Keep
    assert not [ln for ln in lines if ln.startswith((f"{attn}:5:", f"{model}:28:"))], lines
    # the inverted mask also masks every key of the unpadded row: the same two callers
    fully = sorted(ln.split(": ")[0] for ln in lines if " MHA011 " in ln)
    assert fully == sorted([f"{model}:19", f"{test}:20"]), lines
    assert len(lines) == 5, lines
