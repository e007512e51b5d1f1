"""Module constants as the values a construction or call passes (issue 26,
item 5; RULES.md, "known statically"): ``Attention(dropout=NO_DROPOUT)``
with ``NO_DROPOUT = 0.0`` in config.py passes 0.0, as a literal would."""
from __future__ import annotations

from fixture_expect import ROOT, assert_package_runs, copied, write_package

from flake8_mha.lint.engine import analyze_file

PACKAGE = "fixtures/program_calls/constants"
WANT = [
    ("layers.py", 24, 16, "MHA007"),
    ("model.py", 15, 22, "MHA008"),
    ("model.py", 15, 22, "MHA101"),
]


def _rows(path, codes=("MHA006", "MHA007", "MHA008", "MHA101")):
    return [(f.code, f.line, f.col) for f in analyze_file(str(path), list(codes))]


def test_every_door_reads_the_constants_a_construction_passes():
    found = {(f.line, f.code): f.msg for f in assert_package_runs(PACKAGE, WANT)}
    assert found[(24, "MHA007")].endswith(
        "every construction of DroppedAttention in the project (1) passes dropout=0.1")
    # the sizes enter at the construction that hands them (model.py), named there
    assert found[(15, "MHA008")].startswith("d_model=480 is not divisible by nhead=7")
    assert found[(15, "MHA008")].endswith(
        "this call builds it through AudioBlock() at fixtures/program_calls/constants/layers.py:43")


def test_a_name_a_function_binds_itself_is_not_the_constant(tmp_path):
    pkg = copied(ROOT / PACKAGE, tmp_path)
    layers = pkg / "layers.py"
    assert _rows(layers)[:1] == [("MHA007", 24, 16)]
    with open(pkg / "model.py", "a") as f:
        f.write("\n\ndef build(rate):\n    NO_DROPOUT = rate\n"
                "    return Attention(dropout=NO_DROPOUT), Attend(causal=CAUSAL)\n")
    # the local NO_DROPOUT may be anything: Attention's ungated rate is open
    assert _rows(layers)[:2] == [("MHA007", 13, 16), ("MHA007", 24, 16)]


def test_a_name_assigned_twice_is_no_constant(tmp_path):
    pkg = copied(ROOT / PACKAGE, tmp_path)
    model = pkg / "model.py"
    model.write_text(model.read_text().replace("CAUSAL = False\n", "CAUSAL = False\nCAUSAL = True\n"))
    # Attend may be causal and is given a mask: MHA006 at its SDPA call
    assert ("MHA006", 35, 16) in _rows(pkg / "layers.py")
    config = pkg / "config.py"
    config.write_text(config.read_text() + "AUDIO_HEADS = 8\n")
    assert ("MHA008", 15, 22) not in _rows(pkg / "model.py")


def test_an_edit_of_the_constant_s_file_changes_the_finding(tmp_path):
    pkg = copied(ROOT / PACKAGE, tmp_path)
    config = pkg / "config.py"
    config.write_text(config.read_text().replace("NO_DROPOUT = 0.0", "NO_DROPOUT = 0.2"))
    assert _rows(pkg / "layers.py")[:1] == [("MHA007", 13, 16)]


def test_the_cached_finding_follows_an_edit_of_the_constant_s_file(tmp_path, capsys):
    """The file a constant comes from is a dependency of the cached finding."""
    from fixture_expect import check_rows

    pkg = copied(ROOT / PACKAGE, tmp_path)
    model = str(pkg / "model.py")
    assert check_rows(model, capsys) == (1, [(15, "MHA008"), (15, "MHA101")])
    config = pkg / "config.py"
    config.write_text(config.read_text().replace("AUDIO_HEADS = 7", "AUDIO_HEADS = 8"))
    assert check_rows(model, capsys) == (0, [])


DEMO_ATTENTION = '''\
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.dropout_p = dropout

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout_p)


if __name__ == "__main__":
    a = Attention()
'''


def test_a_demo_in_the_class_s_own_file_is_not_a_caller(tmp_path):
    """vit-pytorch's ``vivit.py`` ends with a demo that leaves dropout at 0:
    it does not vouch for every user's model (docs/reach.md)."""
    def package(name, script=None):
        files = {"attention.py": DEMO_ATTENTION, **({"train.py": script} if script else {})}
        pkg = write_package(tmp_path / name / "pkg", files)  # a project root of its own
        return str(pkg / "attention.py")

    got = analyze_file(package("demo"), ["MHA007"])
    assert [(f.code, f.line, f.col) for f in got] == [("MHA007", 11, 16)]
    assert got[0].message.endswith("Attention is never built in the project: its callers are outside it")
    # a script of the project that builds it in its own __main__ block is a caller
    script = ("from .attention import Attention\n\n"
              "if __name__ == '__main__':\n    model = Attention(dropout=0.0)\n")
    assert analyze_file(package("script", script), ["MHA007"]) == []
