"""The thirty-sixth stop.  Issue 30: a project's import graph is built once
per run (``core/runs.py``), not once per file that asks for it, and an
editor's long-lived process still reads what changed on disk at its next
lint.  Issue 26: probe AJ's misses and message errors, from their
reductions, the packages run through flake8 per file, over the package and
through ``check``."""

from __future__ import annotations

import gc
import json
import pathlib

from flake8.main import cli

from fixture_expect import FIXTURES, assert_package_runs, copied, source_rows as _rows
from flake8_mha.analysis.program import callers
from flake8_mha.core import runs
from flake8_mha.lint.engine import analyze_file

CALLERS = FIXTURES / "program_calls" / "callers"
PAIRWISE = pathlib.Path("fixtures/program_calls/pairwise_helpers")
CHAIN = pathlib.Path("fixtures/program_calls/chain_lines")
GATED = pathlib.Path("fixtures/program_calls/gated_chains")
NEW_IMPORTER = (
    "from .attend import causal_attend\n\n\n"
    "def ranked(q, k, v, keep):\n"
    "    return causal_attend(q, k, v, keep)\n"
)


def _flake8_in_process(capsys, *args):
    """flake8 called as an editor's extension calls it, in this process: the
    findings as (file name, line, column, code)."""
    status = cli.main(["--isolated", "--select", "MHA", "--mha-no-cache", "-j", "1", *args])
    out = capsys.readouterr().out
    assert status == (1 if out else 0)
    rows = []
    for line in out.splitlines():
        path, line_no, col, rest = line.split(":", 3)
        rows.append((path.rsplit("/", 1)[-1], int(line_no), int(col), rest.split()[0]))
    return rows


def test_an_editor_process_reads_a_new_importer_at_its_next_lint(tmp_path, capsys):
    # causal_attend's every call passes no mask, so its MHA006 pair is harmless;
    # extra.py, which imported nothing at the first lint, now hands it a mask
    pkg = copied(CALLERS, tmp_path)
    extra = pkg / "extra.py"
    extra.write_text("RANKS = 3\n")
    attend = str(pkg / "attend.py")
    first = _flake8_in_process(capsys, attend)
    assert ("attend.py", 41, 12, "MHA006") in first
    assert ("attend.py", 37, 12, "MHA006") not in first
    extra.write_text(NEW_IMPORTER)
    second = _flake8_in_process(capsys, attend)
    assert sorted(second) == sorted(first + [("attend.py", 37, 12, "MHA006")])


def _import_reads(monkeypatch) -> list:
    """The files whose import lines are asked for from now on, one entry per ask."""
    reads = []
    original = callers._imported_files
    monkeypatch.setattr(callers, "_imported_files", lambda p: reads.append(p) or original(p))
    return reads


def test_one_run_reads_the_import_graph_once(tmp_path, capsys, monkeypatch):
    pkg = copied(CALLERS, tmp_path)
    reads = _import_reads(monkeypatch)
    found = _flake8_in_process(capsys, str(pkg))
    assert len(found) == 10
    model = str(pkg / "model.py")
    # four files linted, each asking who imports it: model.py's imports are read once
    assert reads.count(model) == 1
    _flake8_in_process(capsys, str(pkg))
    assert reads.count(model) == 2  # a new run reads them again


def test_the_run_ends_with_flake8_s_invocation(capsys):
    _flake8_in_process(capsys, str(CALLERS / "model.py"))
    gc.collect()
    assert runs.current() == 0  # the engine called directly keeps nothing


def test_check_reads_the_import_graph_once_per_run(tmp_path, capsys, monkeypatch):
    from flake8_mha.frontends.check import main as check_main

    pkg = copied(CALLERS, tmp_path)
    reads = _import_reads(monkeypatch)
    status = check_main(["--no-cache", "--format", "json", str(pkg)])
    assert status == 1
    assert len(json.loads(capsys.readouterr().out)["findings"]) == 10
    assert reads.count(str(pkg / "model.py")) == 1
    assert runs.current() == 0


# ------------------------------------------------------------- probe AJ's reductions

EINOPS_TWICE = """\
import torch.nn as nn
from einops import rearrange


class Model(nn.Module):
    def __init__(self, dim=64, heads=8):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads)

    def forward(self, tracks):
        h = rearrange(tracks, "b t a d -> (b t) a d")
        h = rearrange(h, "(b t) a d -> a (b t) d", t=tracks.shape[1])
        return self.attn(h, h, h, need_weights=False)[0]
"""


def test_a_merged_batch_moved_whole_by_a_second_rearrange_keeps_its_role(tmp_path):
    # probe AJ's L09: ``(b t)`` is the batch the first pattern made; the second moves
    # it to axis 1, sequence-first, as the module reads it
    assert _rows(EINOPS_TWICE, {"MHA001", "MHA903"}, tmp_path) == [(8, 21, "MHA903")]
    batch_first = EINOPS_TWICE.replace('"(b t) a d -> a (b t) d"', '"(b t) a d -> (b t) a d"')
    assert _rows(batch_first, {"MHA001", "MHA903"}, tmp_path) == [(8, 21, "MHA001")]


def test_the_fix_of_a_compared_mask_tiled_in_another_file_is_parenthesized(tmp_path):
    # probe AJ's r04/c: ``a != b`` handed to a helper that tiles it head-major
    pkg = copied(PAIRWISE, tmp_path)
    (pkg / "masks.py").write_text(
        "def tile_heads(blocked, num_heads):\n    return blocked.repeat(num_heads, 1, 1)\n"
        "\n\ndef same_chute_mask(chutes, num_heads):\n"
        "    return (chutes[:, :, None] != chutes[:, None, :]).repeat_interleave(num_heads, 0)\n"
    )
    layers = pkg / "layers.py"
    layers.write_text(
        layers.read_text()
        .replace("import cross_chute_mask,", "import tile_heads,")
        .replace(
            "cross_chute_mask(chutes, self.heads)",
            "tile_heads(chutes[:, :, None] != chutes[:, None, :], self.heads)",
        )
    )
    found = analyze_file(str(layers))
    assert [(f.line, f.col, f.code) for f in found] == [(16, 18, "MHA016")]
    assert found[0].message.endswith(
        "(use (chutes[:, :, None] != chutes[:, None, :]).repeat_interleave(self.heads, dim=0))"
    )


FORECASTER = """\
import torch
import torch.nn as nn


class Forecaster(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        layer = nn.TransformerDecoderLayer(dim, heads, batch_first=True)
        self.decoder = nn.TransformerDecoder(layer, 2)


@torch.no_grad()
def rollout(model: Forecaster, tgt, memory):
    model.eval()
    return model.decoder(tgt, memory, tgt_is_causal=True)


def main():
    model = Forecaster()
    return model.decoder(torch.randn(2, 3, 64), torch.randn(2, 4, 64), tgt_is_causal=True)


def masked(model: "Forecaster", tgt, memory, causal):
    return model.decoder(tgt, memory, tgt_mask=causal, tgt_is_causal=True)


def unknown(model, tgt, memory):
    return model.decoder(tgt, memory, tgt_is_causal=True)
"""


def test_a_module_an_instance_holds_is_called_outside_its_class(tmp_path):
    # probe AJ's AJ10 in one file: ``model.decoder(...)`` of a parameter annotated
    # with the class, and of a local construction; with the mask given it is right,
    # and an unannotated parameter may be anything
    assert _rows(FORECASTER, {"MHA005"}, tmp_path) == [(15, 12, "MHA005"), (20, 12, "MHA005")]
    two = FORECASTER.replace(
        "    model = Forecaster()\n",
        "    model = Forecaster()\n    if torch.cuda.is_available():\n        model = make()\n",
    )
    assert _rows(two, {"MHA005"}, tmp_path) == [(15, 12, "MHA005")]


def test_a_pairwise_mask_of_two_tensors_rows_is_not_one_sample_s_pairs(tmp_path):
    # the look-alike of probe AJ's AJ04 (the package below): the rows of two
    # different tensors compared are no sample's own pairs, tiled or not
    pkg = copied(PAIRWISE, tmp_path)
    masks = pkg / "masks.py"
    masks.write_text(
        masks.read_text()
        .replace(
            "!= chutes[:, None, :]\n    return blocked.repeat(",
            "!= other[:, None, :]\n    return blocked.repeat(",
        )
        .replace(
            "def cross_chute_mask(chutes, num_heads):",
            "def cross_chute_mask(chutes, num_heads, other=None):",
        )
    )
    assert "other[:, None, :]" in masks.read_text()
    assert analyze_file(str(pkg / "layers.py")) == []


def test_the_pairwise_helpers_package_runs_every_way():
    found = assert_package_runs(PAIRWISE, [("layers.py", 16, 18, "MHA016")])
    assert found[0].msg.endswith("(use blocked.repeat_interleave(num_heads, dim=0) in the helper)")


def test_the_chain_lines_package_runs_every_way():
    found = assert_package_runs(CHAIN, [("model.py", 17, 16, "MHA004")])
    assert found[0].msg.endswith(
        "; the call reaches scores + mask at fixtures/program_calls/chain_lines/attention.py:11"
        " through StationBlock.forward() -> EinsumAttention.forward()"
    )


def test_a_mask_multiplied_by_a_helper_two_calls_down_is_mha012_at_the_top():
    # probe AJ's AJ01: ``gate_scores(scores, keep[:, None, :].float())`` in a function
    # whose ``keep`` its callers hand; a scale handed to the same helper is silent
    # ``station_attention_heads`` multiplies a local spread over the heads from its
    # ``keep`` (``expand(...).reshape(...)``), the probe's package form
    found = assert_package_runs(
        GATED, [("model.py", 10, 12, "MHA012"), ("model.py", 15, 12, "MHA012")]
    )
    assert found[0].msg.endswith(
        "; the call reaches scores * mask at fixtures/program_calls/gated_chains/attention.py:10"
        " through station_attention()"
    )
