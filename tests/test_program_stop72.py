"""The forty-third stop.  Issue 26: a module handed to a helper as a
parameter; the callers of that helper in its file say which module it is."""

from __future__ import annotations

from pathlib import Path

from fixture_expect import assert_package_runs, copied, write_package
from flake8_mha.lint.engine import analyze_file

PACKAGE = Path("fixtures/program_calls/handed_models")


def _rows(found):
    return [(f.line, f.col, f.code) for f in found]


def test_a_helper_handed_the_model_runs_its_forward_at_its_call():
    # probe AO's FALSE01 (keep_scores, right) beside the wrong pad_scores
    assert_package_runs(str(PACKAGE), [("scoring.py", 15, 12, "MHA002")])


def _scoring(tmp_path, main: str):
    pkg = copied(PACKAGE, tmp_path)
    text = (pkg / "scoring.py").read_text()
    head = text[: text.index("def main():")]
    (pkg / "scoring.py").write_text(head + main)
    return analyze_file(str(pkg / "scoring.py"), ["MHA002", "MHA003", "MHA004"])


def test_the_model_built_in_the_call_is_the_one_the_helper_runs(tmp_path):
    main = "def main(ids):\n    return pad_scores(TinyLM(), ids, 0)\n"
    assert _rows(_scoring(tmp_path, main)) == [(15, 12, "MHA002")]


def test_a_helper_also_handed_as_a_value_is_not_read_from_its_calls(tmp_path):
    # ``pad_scores`` handed to a runner: who else calls it, with what, is unknown
    main = (
        "def main(ids, run):\n"
        "    model = TinyLM()\n"
        "    run(pad_scores)\n"
        "    return pad_scores(model, ids, 0)\n"
    )
    assert _rows(_scoring(tmp_path, main)) == []


def test_a_helper_called_with_something_unknown_stays_unknown(tmp_path):
    main = (
        "def main(ids, other):\n"
        "    pad_scores(TinyLM(), ids, 0)\n"
        "    return pad_scores(other, ids, 0)\n"
    )
    assert _rows(_scoring(tmp_path, main)) == []


def test_a_helper_never_called_in_its_file_is_not_guessed(tmp_path):
    assert _rows(_scoring(tmp_path, "")) == []


MODEL_AND_HELPER = """\
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(32, 4, batch_first=True)

    def forward(self, x, key_padding_mask=None):
        return self.layer(x, src_key_padding_mask=key_padding_mask)


def encode(encoder, x, lengths):
    keep = torch.arange(x.shape[1])[None, :] < lengths[:, None]
    return encoder(x, key_padding_mask=keep)


def main(x, lengths):
    encoder = Encoder()
    return encode(encoder, x, lengths)
"""


def test_a_keep_mask_handed_through_the_helper_to_the_padding_mask(tmp_path):
    pkg = write_package(tmp_path / "pkg", {"model.py": MODEL_AND_HELPER})
    found = analyze_file(str(pkg / "model.py"), ["MHA003"])
    assert _rows(found) == [(16, 12, "MHA003")]

