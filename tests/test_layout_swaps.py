"""Swaps to sequence-first right before the layer that reads them, with the
layers in another file (issue 26, "layout through the program"): through a
helper of a third file whose one return is the swap (``to_time_major(x)``),
into a base class's ``forward`` whose ``self.attn`` only a subclass builds,
after a token is concatenated to the swapped data, and in CLIP's attention
pool.  The default-built layers get no MHA001 (their MHA903 says they are
right); the batch-first encoder fed the helper's swap of batch-first data is
MHA010.  Checked over the package, per file, and through ``check``."""
from __future__ import annotations

import subprocess
import sys

from fixture_expect import ROOT, flake8_run, package_rows
from flake8_mha.lint.engine import analyze_file

PACKAGE = "fixtures/program_layout/swaps"
WANT = [
    ("layers.py", 22, 21, "MHA903"),
    ("layers.py", 28, 21, "MHA903"),
    ("layers.py", 40, 21, "MHA903"),
    ("encoders.py", 11, 16, "MHA010"),
]


def test_over_the_package_one_file_at_a_time_and_through_check():
    # MHA903 is opt-in: flake8 --select MHA turns it on, the default codes leave it off
    status, found = flake8_run(PACKAGE)
    assert (status, package_rows(found)) == (1, sorted(WANT))
    helper = next(f for f in found if f.code == "MHA010")
    assert "swaps/model.py line 32: `to_time_major(x)`" in helper.msg
    for path in sorted((ROOT / PACKAGE).glob("*.py")):
        status, alone = flake8_run(f"{PACKAGE}/{path.name}")
        mine = sorted(w for w in WANT if w[0] == path.name)
        assert (status, package_rows(alone)) == (1 if mine else 0, mine), path.name
    proc = subprocess.run(
        [sys.executable, "-m", "flake8_mha.frontends.cli", "check", "--no-cache", PACKAGE],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    out = [line.split(" ", 2)[:2] for line in proc.stdout.splitlines() if ": MHA" in line]
    assert (proc.returncode, out) == (1, [[f"{PACKAGE}/encoders.py:11:16:", "MHA010"]])


def test_no_default_layer_fed_its_swap_is_reported_by_default():
    assert analyze_file(str(ROOT / PACKAGE / "layers.py")) == []  # MHA001 was here


EINOPS_LAYER = '''\
import torch.nn as nn
from einops.layers.torch import Rearrange


class Swin3DEncoder(nn.Module):
    def __init__(self, embed_dim=96):
        super().__init__()
        self.swin_transformer = nn.Transformer(d_model=embed_dim, nhead=8)
        self.to_transformer_format = Rearrange("PATTERN")

    def transformer_encoder(self, x):
        x = self.to_transformer_format(x)
        return self.swin_transformer.encoder(x)
'''


def test_an_einops_rearrange_layer_kept_on_self_is_its_pattern(tmp_path):
    """graph-weather's ``self.to_transformer_format = Rearrange("b d h w c ->
    (d h w) b c")`` (release review 20): the layer's call is ``rearrange``
    with its pattern, sequence-first here (MHA903, opt-in; no MHA001), batch
    first with the other pattern (MHA001, naming the layer's call)."""
    from flake8_mha.lint.engine import analyze_source

    seq = EINOPS_LAYER.replace("PATTERN", "b d h w c -> (d h w) b c")
    path = tmp_path / "encoder.py"
    got = analyze_source(seq, str(path), ["MHA001", "MHA903"])
    assert [(f.code, f.line, f.col) for f in got] == [("MHA903", 8, 33)]
    assert "line 12: `self.to_transformer_format(x)`" in got[0].message
    batch = EINOPS_LAYER.replace("PATTERN", "b d h w c -> b (d h w) c")
    got = analyze_source(batch, str(path), ["MHA001", "MHA903"])
    assert [(f.code, f.line, f.col) for f in got] == [("MHA001", 8, 33)]
    assert "self.to_transformer_format(x)" in got[0].message
