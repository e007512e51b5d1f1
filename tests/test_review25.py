"""Review 25's false findings, each fixed: a parameter named a padding mask
that its own function inverts (phynteny), a torch stack and the caller's
stack chosen on a flag set beside the construction (shiba,
``fixtures/MHA001_stack_choice.py``), and the tokenizer's name where the
project itself binds it to a padding mask (shiba's tokenizer)."""

from __future__ import annotations

from fixture_expect import flake8_in_project, write_package
from flake8_mha.lint.engine import analyze_source

PHYNTENY = """\
import torch
import torch.nn.functional as F


def attend(q, k, v, src_key_padding_mask=None):
    scores = q @ k.transpose(-2, -1)
    if src_key_padding_mask is not None:
        scores = scores.masked_fill(src_key_padding_mask.unsqueeze(1).unsqueeze(2) == 0, float("-inf"))
    return F.softmax(scores, dim=-1) @ v
"""


def test_a_padding_mask_name_its_function_inverts_says_nothing_sure():
    assert analyze_source(PHYNTENY, "a.py", ["MHA003"]) == []
    # without the inversion the name is the evidence, as before
    plain = PHYNTENY.replace(".unsqueeze(2) == 0", ".unsqueeze(2)")
    assert analyze_source(plain, "a.py", ["MHA003"]) == []  # True = ignore, filled: right
    eq = PHYNTENY.replace(
        "src_key_padding_mask.unsqueeze(1).unsqueeze(2) == 0", "~src_key_padding_mask"
    )
    assert analyze_source(eq, "a.py", ["MHA003"]) == []


MODEL = """\
import torch


class Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(100, 16)
        self.enc = torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(16, 2, batch_first=True), 1
        )

    def forward(self, input_ids, attention_mask):
        return self.enc(self.emb(input_ids), src_key_padding_mask=attention_mask)
"""


def _tagger(tmp_path, tokenizer: str):
    pkg = write_package(tmp_path / "pkg", {"model.py": MODEL, "tokenizer.py": tokenizer})
    model = pkg / "model.py"
    return [(f.code, f.line) for f in analyze_source(model.read_text(), str(model), ["MHA003"])]


def test_the_project_s_own_tokenizer_decides_what_attention_mask_means(tmp_path):
    padding = (
        "def encode(ids, PAD=0):\n    attention_mask = ids == PAD\n    return ids, attention_mask\n"
    )
    assert _tagger(tmp_path, padding) == []


def test_without_such_a_binding_the_name_is_transformers_tokenizer_mask(tmp_path):
    keep = "def encode(ids, pad_id=0):\n    attention_mask = ids != pad_id\n    return ids, attention_mask\n"
    assert _tagger(tmp_path, keep) == [("MHA003", 13)]


def test_an_edit_of_the_tokenizer_changes_the_finding_with_the_cache_on(tmp_path):
    """flake8's results cache on (a project of its own): model.py is unchanged,
    its finding follows how tokenizer.py binds the name."""
    (tmp_path / "setup.cfg").write_text("[flake8]\n")
    padding = (
        "def encode(ids, PAD=0):\n    attention_mask = ids == PAD\n    return ids, attention_mask\n"
    )
    write_package(tmp_path / "pkg", {"model.py": MODEL, "tokenizer.py": padding})

    def run():
        return flake8_in_project(tmp_path, "pkg/model.py", "MHA003")

    assert run() == (0, [])
    assert (tmp_path / ".flake8-mha-cache").is_dir()
    tokenizer = tmp_path / "pkg" / "tokenizer.py"
    tokenizer.write_text(padding.replace("ids == PAD", "ids != PAD"))
    assert run() == (1, [["pkg/model.py:13:16:", "MHA003"]])
    tokenizer.write_text(padding)
    assert run() == (0, [])
