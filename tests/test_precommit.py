"""The pre-commit hooks, run by the real ``pre-commit try-repo``.

pre-commit builds the hook's own virtualenv by pip-installing the hook
repository, so this exercises .pre-commit-hooks.yaml, the package metadata
and the console script together.  The hook repository is a fresh git repo
holding a copy of this tree's package files (the working tree may hold
uncommitted work of others; the copy is exactly what is on disk here).
The first run builds the environment (about 15 s); the others reuse it.
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"

pytestmark = pytest.mark.slow

try:
    import pre_commit  # noqa: F401
    HAVE_PRE_COMMIT = True
except ImportError:
    HAVE_PRE_COMMIT = False

if not HAVE_PRE_COMMIT:
    pytest.skip("pre-commit is not installed (it is in the 'test' extra: pip install -e '.[test]')",
                allow_module_level=True)
if shutil.which("git") is None:
    pytest.skip("git is not installed: pre-commit needs it", allow_module_level=True)

PACKAGE_FILES = ("setup.cfg", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in",
                 ".pre-commit-hooks.yaml")


def git(*args: str, cwd) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("hook-repo")
    for name in PACKAGE_FILES:
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, repo / name)
    shutil.copytree(ROOT / "flake8_mha", repo / "flake8_mha",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git("init", "-q", cwd=repo)
    git("add", ".", cwd=repo)
    git("commit", "-q", "-m", "hook repo", cwd=repo)
    return repo


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory):
    return tmp_path_factory.mktemp("pre-commit-home")


def try_repo(hook_repo, home, target, hook, *files, stage=None):
    args = [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), hook]
    if stage:
        args += ["--hook-stage", stage]
    args += ["--files", *files]
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never")
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(args, cwd=target, capture_output=True, text=True, env=env, timeout=900)


def target_repo(path: pathlib.Path, files: dict) -> pathlib.Path:
    path.mkdir()
    git("init", "-q", cwd=path)
    for name, text in files.items():
        (path / name).write_text(text, encoding="utf-8")
    git("add", ".", cwd=path)
    return path


def test_hook_fails_on_a_bad_file_with_the_finding(hook_repo, pre_commit_home, tmp_path):
    target = target_repo(tmp_path / "t", {
        "model.py": (DATA / "bad_model.py").read_text(encoding="utf-8")})
    proc = try_repo(hook_repo, pre_commit_home, target, "flake8-mha", "model.py")
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "flake8-mha...." in out and "Failed" in out
    assert ("model.py:10:21: MHA001 MultiheadAttention built without batch_first: (N, L, E) "
            "input silently mixes samples across the batch") in out.splitlines()
    assert "- exit code: 1" in out


def test_hook_passes_on_a_good_file(hook_repo, pre_commit_home, tmp_path):
    target = target_repo(tmp_path / "t", {
        "model.py": (DATA / "good_model.py").read_text(encoding="utf-8")})
    proc = try_repo(hook_repo, pre_commit_home, target, "flake8-mha", "model.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "flake8-mha" in proc.stdout and "Passed" in proc.stdout


def test_hook_checks_notebooks(hook_repo, pre_commit_home, tmp_path):
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": ["import torch.nn as nn\n",
                                "layer = nn.TransformerEncoderLayer(64, 8)"]}],
          "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    target = target_repo(tmp_path / "t", {"demo.ipynb": json.dumps(nb, indent=1) + "\n"})
    proc = try_repo(hook_repo, pre_commit_home, target, "flake8-mha", "demo.ipynb")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "demo.ipynb:cell_1:2:9: MHA001 " in proc.stdout


def test_confirm_hook_is_manual_only(hook_repo, pre_commit_home, tmp_path):
    target = target_repo(tmp_path / "t", {
        "model.py": (DATA / "bad_model.py").read_text(encoding="utf-8")})
    proc = try_repo(hook_repo, pre_commit_home, target, "flake8-mha-confirm", "model.py")
    assert proc.returncode == 1
    assert "No hook with id `flake8-mha-confirm` in stage `pre-commit`" in proc.stdout + proc.stderr
    # in the manual stage it runs `flake8-mha confirm`; the hook env has no torch
    # unless the user adds it (additional_dependencies), and says so in one line
    proc = try_repo(hook_repo, pre_commit_home, target, "flake8-mha-confirm", "model.py",
                    stage="manual")
    assert "flake8-mha confirm" in proc.stdout
    assert proc.returncode != 0
    assert "torch is required to confirm findings" in proc.stdout


def test_hook_checks_the_callers_of_a_changed_wrapper(hook_repo, pre_commit_home, tmp_path):
    """Issue 26: a commit changes only the shared mask wrapper (its ``~``
    removed); the unchanged caller, which names no attention API, now passes an
    ignore-mask where SDPA attends on True.  The hook checks the caller too."""
    wrapper = (
        "import torch.nn.functional as F\n\n\n"
        "def attend(x, pad):\n"
        "    return F.scaled_dot_product_attention(x, x, x, attn_mask=~pad)\n"
    )
    caller = (
        "from .attn import attend\n\n\n"
        "def run(x, tokens, pad_id):\n"
        "    return attend(x, (tokens == pad_id)[:, None, None, :])\n"
    )
    target = tmp_path / "t"
    (target / "pkg").mkdir(parents=True)
    git("init", "-q", cwd=target)
    for name, text in {"__init__.py": "", "attn.py": wrapper, "caller.py": caller}.items():
        (target / "pkg" / name).write_text(text, encoding="utf-8")
    git("add", ".", cwd=target)
    proc = try_repo(hook_repo, pre_commit_home, target, "flake8-mha", "pkg/attn.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (target / "pkg" / "attn.py").write_text(wrapper.replace("~pad", "pad"), encoding="utf-8")
    git("add", ".", cwd=target)
    proc = try_repo(hook_repo, pre_commit_home, target, "flake8-mha", "pkg/attn.py")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if ": MHA" in line]
    assert [line.split(" means")[0] for line in lines] == [
        "pkg/caller.py:5:12: MHA002 mask from line 5 (tokens == pad_id)"]
