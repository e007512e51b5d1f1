"""The forty-fifth stop.  Issue 26: a module call whose masks come some from
the callers, some from in here, judged per argument (probe AP's finding
given twice)."""

from __future__ import annotations

from pathlib import Path

from fixture_expect import assert_package_runs, copied
from flake8_mha.lint.engine import analyze_file

PADDING = Path("fixtures/program_calls/padding_beside_causal")
CAUSAL = "causal = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), 1)"


def _rows(found):
    return [(f.line, f.col, f.code) for f in found]


def test_the_callers_padding_is_reported_once_at_the_call_that_hands_it():
    assert_package_runs(str(PADDING), [("decoder.py", 30, 14, "MHA003")])


def test_a_wrong_mask_made_in_here_is_still_judged_in_here(tmp_path):
    pkg = copied(PADDING, tmp_path)
    decoder = pkg / "decoder.py"
    decoder.write_text(
        decoder.read_text().replace(
            CAUSAL, "causal = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device))"
        )
    )
    assert _rows(analyze_file(str(decoder), ["MHA003"])) == [(17, 16, "MHA003"), (30, 14, "MHA003")]


def test_a_right_padding_leaves_the_decoder_silent(tmp_path):
    pkg = copied(PADDING, tmp_path)
    decoder = pkg / "decoder.py"
    decoder.write_text(
        decoder.read_text().replace('enc["attention_mask"].bool()', 'enc["attention_mask"] == 0')
    )
    assert _rows(analyze_file(str(decoder), ["MHA003", "MHA004"])) == []
