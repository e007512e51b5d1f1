"""Issue 28 through the real ``pre-commit try-repo``: the hook honours
flake8's configuration of the repository it runs in (item 1), and the
confirm hook is given notebooks (item 9).  The hook repository and the
pre-commit home are test_precommit.py's (built once per module)."""
from __future__ import annotations

import json

import pytest

from test_precommit import hook_repo, pre_commit_home, target_repo, try_repo  # noqa: F401

pytestmark = pytest.mark.slow

MODEL = "import torch.nn as nn\n\na = nn.MultiheadAttention(64, 8)\nb = nn.MultiheadAttention(63, 3, batch_first=True)\n"


def test_hook_reads_flake8_s_configuration(hook_repo, pre_commit_home, tmp_path):  # noqa: F811
    target = target_repo(tmp_path / "t", {
        "setup.cfg": "[flake8]\nextend-ignore = MHA101\n"
                     "per-file-ignores = planted.py:MHA\n",
        "model.py": MODEL,
        "planted.py": MODEL,
    })
    proc = try_repo(hook_repo, pre_commit_home, target, "flake8-mha", "model.py", "planted.py")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    findings = [line for line in proc.stdout.splitlines() if ": MHA" in line]
    assert findings == [
        "model.py:3:5: MHA001 MultiheadAttention built without batch_first: (N, L, E) input "
        "silently mixes samples across the batch"]


def test_confirm_hook_is_given_notebooks(hook_repo, pre_commit_home, tmp_path):  # noqa: F811
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": ["import torch.nn as nn\n",
                                "layer = nn.TransformerEncoderLayer(64, 8)"]}],
          "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    target = target_repo(tmp_path / "t", {"demo.ipynb": json.dumps(nb, indent=1) + "\n"})
    proc = try_repo(hook_repo, pre_commit_home, target, "flake8-mha-confirm", "demo.ipynb",
                    stage="manual")
    out = proc.stdout + proc.stderr
    assert "no files to check" not in out
    # the hook ran on the notebook: the hook env has no torch, and says so in one line
    assert proc.returncode != 0
    assert "torch is required to confirm findings" in out
