"""Issue 28, item 3 in an editor: a real pylsp session on a project whose
``.flake8`` is black's (``ignore = E203,W503``) shows the MHA codes but not
the opt-in ones, unless the user's pylsp settings ask for them."""
from __future__ import annotations

import json

import pytest

from test_editor_pylsp import SETTINGS, _flake8_executable, published_diagnostics

pytestmark = pytest.mark.slow

SOURCE = """\
import torch.nn as nn

a = nn.MultiheadAttention(64, 8)
b = nn.MultiheadAttention(64, 8, batch_first=False)
"""


def _mha_codes(tmp_path, extend_select=None):
    (tmp_path / ".flake8").write_text("[flake8]\nmax-line-length = 88\nignore = E203,W503\n")
    path = tmp_path / "model.py"
    path.write_text(SOURCE, encoding="utf-8")
    settings = json.loads(json.dumps(SETTINGS))
    flake8 = settings["pylsp"]["plugins"]["flake8"]
    flake8["executable"] = _flake8_executable()
    if extend_select:
        flake8["extendSelect"] = extend_select
    diagnostics = published_diagnostics(tmp_path, path, SOURCE, settings)
    return sorted((d["range"]["start"]["line"], d["code"]) for d in diagnostics
                  if str(d.get("code", "")).startswith("MHA"))


def test_black_style_config_keeps_the_opt_in_codes_off_in_pylsp(tmp_path):
    assert _mha_codes(tmp_path) == [(2, "MHA001")]


def test_pylsp_extend_select_turns_them_on(tmp_path):
    assert _mha_codes(tmp_path, ["MHA9"]) == [(2, "MHA001"), (3, "MHA902")]
