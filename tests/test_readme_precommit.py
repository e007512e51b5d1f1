"""The README's pre-commit snippets work as written (with their placeholders
filled in), through the real pre-commit, and name no repository URL that does
not exist."""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
README = (ROOT / "README.md").read_text(encoding="utf-8")
SECTION = README[README.index("### pre-commit\n"):README.index("### Editors\n")]
BLOCKS = re.findall(r"```yaml\n(.*?)```", SECTION, re.S)

pytestmark = pytest.mark.slow

try:
    import pre_commit  # noqa: F401
    import yaml
    HAVE_PRE_COMMIT = True
except ImportError:
    HAVE_PRE_COMMIT = False


def _block(marker: str) -> str:
    (block,) = [b for b in BLOCKS if marker in b]
    return block


def test_no_snippet_names_a_repository_url():
    assert len(BLOCKS) == 2
    assert "https://" not in "".join(BLOCKS)
    assert "not published yet" in SECTION


def test_snippets_are_valid_yaml_naming_the_published_hooks():
    if not HAVE_PRE_COMMIT:
        pytest.skip("pre-commit is not installed (it is in the 'test' extra)")
    hooks = {h["id"] for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    clone = yaml.safe_load(_block("rev:"))
    assert {h["id"] for h in clone[0]["hooks"]} <= hooks
    local = yaml.safe_load(_block("repo: local"))
    (hook,) = local[0]["hooks"]
    published = {h["id"]: h for h in yaml.safe_load(
        (ROOT / ".pre-commit-hooks.yaml").read_text())}["flake8-mha"]
    assert (hook["entry"], hook["types_or"]) == (published["entry"], published["types_or"])


def _git(*args, cwd):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def _target(path: pathlib.Path, config: str) -> pathlib.Path:
    path.mkdir()
    _git("init", "-q", cwd=path)
    (path / "model.py").write_text((DATA / "bad_model.py").read_text(encoding="utf-8"))
    (path / ".pre-commit-config.yaml").write_text("repos:\n" + config)
    _git("add", ".", cwd=path)
    return path


def _pre_commit(target, home, *args):
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never")
    # the environment pre-commit runs in: this venv, whose flake8-mha is this tree
    env["PATH"] = os.pathsep.join([str(pathlib.Path(sys.executable).parent), env["PATH"]])
    return subprocess.run([sys.executable, "-m", "pre_commit", "run", *args, "--all-files"],
                          cwd=target, capture_output=True, text=True, env=env, timeout=900)


def test_the_local_hook_runs_the_installed_flake8_mha(tmp_path):
    if not HAVE_PRE_COMMIT or shutil.which("git") is None:
        pytest.skip("needs pre-commit and git")
    target = _target(tmp_path / "t", _block("repo: local"))
    proc = _pre_commit(target, tmp_path / "home", "flake8-mha")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ("model.py:10:21: MHA001 MultiheadAttention built without batch_first: (N, L, E) "
            "input silently mixes samples across the batch") in proc.stdout.splitlines()


def test_the_clone_hook_builds_from_a_path(tmp_path):
    if not HAVE_PRE_COMMIT or shutil.which("git") is None:
        pytest.skip("needs pre-commit and git")
    clone = tmp_path / "flake8-mha"
    clone.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in",
                 ".pre-commit-hooks.yaml"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, clone / name)
    shutil.copytree(ROOT / "flake8_mha", clone / "flake8_mha",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _git("init", "-q", cwd=clone)
    _git("add", ".", cwd=clone)
    _git("commit", "-q", "-m", "clone", cwd=clone)
    head = _git("rev-parse", "HEAD", cwd=clone)
    config = _block("rev:").replace("path/to/flake8-mha", str(clone)).replace(
        "<commit of that clone>", head)
    target = _target(tmp_path / "t", config)
    proc = _pre_commit(target, tmp_path / "home", "flake8-mha")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "model.py:10:21: MHA001 " in proc.stdout
