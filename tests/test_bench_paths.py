"""Committed files name paths relative to the repository, never this
machine's (virtualenvs, site-packages, home directories); the benchmark
writers make them so before they write bench/RESULTS.md and bench/SCALE.md."""
from __future__ import annotations

import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
MACHINE_PATH = re.compile(r"(?<![\w.<])/(?:root|home|Users|work|tmp|usr|opt)/[^\s`'\")]*")
TEXT = ("*.md", "*.py", "*.toml", "*.cfg", "*.yaml", "*.yml", "*.txt")
SKIP_DIRS = {".git", ".venvs", ".cache", "__pycache__", ".hypothesis", "build", "dist",
             ".pytest_cache"}


def _committed_text_files():
    for pattern in TEXT:
        for path in ROOT.rglob(pattern):
            rel = path.relative_to(ROOT)
            if SKIP_DIRS & set(rel.parts) or any(p.endswith(".egg-info") for p in rel.parts):
                continue
            yield path


def test_bench_results_name_no_machine_path():
    for name in ("RESULTS.md", "SCALE.md"):
        text = (ROOT / "bench" / name).read_text(encoding="utf-8")
        assert not MACHINE_PATH.findall(text), name
        assert "site-packages/" not in text.replace("<site-packages>/", "")


def test_docs_and_readme_name_no_machine_path():
    found = []
    for path in _committed_text_files():
        if path.suffix != ".md":
            continue
        for m in MACHINE_PATH.finditer(path.read_text(encoding="utf-8", errors="replace")):
            found.append(f"{path.relative_to(ROOT)}: {m.group()}")
    assert not found, "\n".join(found)


@pytest.fixture
def bench_common():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import _common
        yield _common
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_bench_writers_show_paths_relative(bench_common):
    shown = bench_common.shown
    assert shown(ROOT / "bench" / ".venvs" / "mha" / "bin" / "flake8") == "bench/.venvs/mha/bin/flake8"
    assert shown("/opt/py/lib/python3.11/site-packages/torch/nn/functional.py") == \
        "<site-packages>/torch/nn/functional.py"
    assert shown("/somewhere/else/model.py") == "<model.py>"
    assert shown("relative/x.py") == "relative/x.py"
    command = bench_common.shown_command(
        [str(ROOT / "bench" / ".venvs" / "base" / "bin" / "flake8"), "--select=E9", "-j", "1",
         "/opt/py/lib/python3.11/site-packages/torch"])
    assert command == "bench/.venvs/base/bin/flake8 --select=E9 -j 1 <site-packages>/torch"
