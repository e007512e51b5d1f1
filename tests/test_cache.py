"""The cache of per-file results (``flake8_mha/app/cache.py``): a second run reads
it and says exactly what the first said; anything that changes findings misses."""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from flake8_mha.app import cache as cache_mod
from flake8_mha.lint import engine
from flake8_mha.frontends.check import main as check_main

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

BAD = """import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(64, 8)
"""
MHA001 = "bad.py:7:21: MHA001 "


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A copy of a few fixtures (a notebook among them) in the current directory."""
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "src"
    src.mkdir()
    for name in sorted(os.listdir(FIXTURES)):
        if name.startswith(("MHA001", "MHA006", "MHA003")) or name.endswith(".ipynb"):
            shutil.copy(FIXTURES / name, src / name)
    (src / "bad.py").write_text(BAD)
    (src / "broken.py").write_text("import torch.nn as nn\nnn.MultiheadAttention\ndef f(:\n")
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# title"]},
             {"cell_type": "code", "metadata": {}, "source": BAD.splitlines(keepends=True),
              "outputs": [], "execution_count": None}]
    (src / "nb.ipynb").write_text(json.dumps(
        {"cells": cells, "metadata": {"language_info": {"name": "python"}},
         "nbformat": 4, "nbformat_minor": 5}))
    return tmp_path


@pytest.fixture
def analyses(monkeypatch):
    """How many texts the analyzer was run on (in this process: -j1)."""
    calls = []
    real = engine.analyze_source

    def counted(text, path, *args, **kwargs):
        calls.append(path)
        return real(text, path, *args, **kwargs)

    monkeypatch.setattr(engine, "analyze_source", counted)
    return calls


def check(capsys, *args):
    status = check_main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def entries(directory) -> list:
    return sorted(p for p in pathlib.Path(directory).glob("*/*.json"))


def results(directory) -> list:
    """The cache's entries of findings, one per file (not the records of the
    other files a file's findings depend on, ``deps-*``)."""
    return [p for p in entries(directory) if not p.name.startswith("deps-")]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_second_run_is_identical_and_reads_the_cache(tree, analyses, capsys, fmt):
    first = check(capsys, "src", "--format", fmt)
    n = len(analyses)
    assert n > 5 and first[0] == 2  # findings, and broken.py's syntax error
    assert "broken.py:3:8: E999" in first[2]  # flake8's column
    if fmt == "text":
        assert MHA001 in first[1] and "nb.ipynb:cell_1:7:21: MHA001" in first[1]
    assert len(results(".flake8-mha-cache")) == len(os.listdir("src"))
    second = check(capsys, "src", "--format", fmt)
    assert second == first
    assert len(analyses) == n  # nothing analysed again


def test_edited_file_is_analysed_again(tree, analyses, capsys):
    check(capsys, "src")
    before = len(analyses)
    (tree / "src" / "bad.py").write_text(BAD.replace("(64, 8)", "(64, 8, batch_first=True)"))
    status, out, _ = check(capsys, "src")
    assert analyses[before:] == ["src/bad.py"]
    assert MHA001 not in out


def test_other_selection_misses(tree, analyses, capsys):
    check(capsys, "src")
    before = len(analyses)
    status, out, _ = check(capsys, "src", "--select", "MHA006")
    assert len(analyses) > before
    assert out and all(" MHA006 " in line for line in out.splitlines() if "E999" not in line)
    again = check(capsys, "src", "--select", "MHA006")
    assert again[1] == out


def test_package_source_is_part_of_the_key(tree, monkeypatch):
    key = cache_mod.entry_key(b"x = 1\n", "a.py", ["MHA001"], False, "check")
    monkeypatch.setattr(cache_mod, "_source_hash", "edited")
    assert cache_mod.entry_key(b"x = 1\n", "a.py", ["MHA001"], False, "check") != key
    monkeypatch.setattr("flake8_mha.__version__", "9.9.9")
    monkeypatch.setattr(cache_mod, "_source_hash", None)
    assert cache_mod.entry_key(b"x = 1\n", "a.py", ["MHA001"], False, "check") != key
    assert cache_mod.entry_key(b"x = 1\n", "a.py", ["MHA001"], True, "check") != \
        cache_mod.entry_key(b"x = 1\n", "a.py", ["MHA001"], False, "check")


@pytest.mark.parametrize("damage", [
    lambda p: p.write_text(p.read_text()[: len(p.read_text()) // 2]),  # half-written
    lambda p: p.write_text("not json"),
    lambda p: p.write_text(json.dumps({"schema": 1, "items": [], "problems": []})),
    lambda p: p.write_text(p.read_text().replace('"line": 7', '"line": "7"')),
])
def test_corrupt_entry_is_recomputed(tree, analyses, capsys, damage):
    first = check(capsys, "src/bad.py")
    [entry] = entries(".flake8-mha-cache")
    damage(entry)
    second = check(capsys, "src/bad.py")
    assert second == first and MHA001 in second[1]
    assert analyses == ["src/bad.py", "src/bad.py"]
    assert check(capsys, "src/bad.py") == first  # rewritten whole: a hit again
    assert len(analyses) == 2


def test_no_cache_writes_nothing_and_reads_nothing(tree, analyses, capsys):
    first = check(capsys, "src", "--no-cache")
    assert not (tree / ".flake8-mha-cache").exists()
    n = len(analyses)
    check(capsys, "src")  # fills the cache
    assert check(capsys, "src", "--no-cache") == first
    assert len(analyses) == 3 * n  # the cache was not read


def test_cache_dir_option_and_config(tree, analyses, capsys):
    check(capsys, "src/bad.py", "--cache-dir", "elsewhere")
    assert len(entries("elsewhere")) == 1 and not (tree / ".flake8-mha-cache").exists()
    (tree / "setup.cfg").write_text("[flake8-mha]\ncache-dir = conf-cache\n")
    check(capsys, "src/bad.py")
    assert len(entries("conf-cache")) == 1
    (tree / "setup.cfg").write_text("[flake8-mha]\nno-cache = true\n")
    shutil.rmtree("conf-cache")
    check(capsys, "src/bad.py")
    assert not (tree / "conf-cache").exists()


def test_fix_and_diff_do_not_use_the_cache(tree, analyses, capsys):
    check(capsys, "src", "--diff")
    assert not (tree / ".flake8-mha-cache").exists()


def test_noqa_still_applied(tree, analyses, capsys):
    (tree / "src" / "bad.py").write_text(BAD.replace("(64, 8)", "(64, 8)  # noqa: MHA001"))
    for _ in range(2):
        status, out, _ = check(capsys, "src/bad.py")
        assert status == 0 and out == ""
    status, out, _ = check(capsys, "src/bad.py", "--disable-noqa")
    assert status == 1 and MHA001 in out
    assert len(analyses) == 2


def test_unwritable_cache_dir_is_skipped(tree, analyses, capsys):
    (tree / "blocker").write_text("a file, not a folder")
    first = check(capsys, "src/bad.py", "--cache-dir", "blocker/cache")
    assert first[0] == 1 and MHA001 in first[1]
    assert first[2] == "" and first == check(capsys, "src/bad.py", "--no-cache")


def test_cache_dir_is_not_linted(tree, capsys):
    check(capsys, "src")
    (tree / ".flake8-mha-cache" / "stray.py").write_text(BAD)
    status, out, _ = check(capsys, ".")
    assert ".flake8-mha-cache" not in out


def test_prune_keeps_the_newest(tmp_path):
    c = cache_mod.Cache(str(tmp_path))
    keys = [f"{i:02x}" + "0" * 62 for i in range(10)]
    for n, key in enumerate(keys):
        c.store(key, [], [])
        os.utime(c._path(key), (1000 + n, 1000 + n))
    assert c.prune(max_entries=5) == 6  # down to 80% of the bound
    assert [p.stem for p in entries(tmp_path)] == keys[6:]
    assert c.prune(max_entries=5) == 0


def test_parallel_runs_agree(tree):
    def run(*args):
        proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", "check", "src",
                               "--format", "json", *args], cwd=tree, capture_output=True,
                              text=True, timeout=300)
        return proc.returncode, proc.stdout, proc.stderr

    cold = run("-j2", "--cache-dir", "c")
    assert cold[0] == 2 and '"code": "MHA001"' in cold[1] and "broken.py:3:8: E999" in cold[2]
    assert cold == run("-j1", "--no-cache")
    assert run("-j2", "--cache-dir", "c") == cold  # warm, in workers
    assert run("-j1", "--cache-dir", "c") == cold
    found = sorted(str(p.relative_to(tree)) for p in (tree / "c").rglob("*"))
    assert len(results(tree / "c")) == len(os.listdir(tree / "src")), (found, cold[2])


def test_codes_memo_is_checked_and_recomputed(tree, capsys):
    first = check(capsys, "src", "--select", "MHA001")
    [memo] = pathlib.Path(".flake8-mha-cache").glob("codes-*.json")
    assert json.loads(memo.read_text())["codes"] == ["MHA001"]
    memo.write_text('{"codes": ["MHA0')  # truncated
    assert check(capsys, "src", "--select", "MHA001") == first
    assert json.loads(memo.read_text())["codes"] == ["MHA001"]
    other = check(capsys, "src", "--select", "MHA006")
    assert other[1] != first[1] and len(list(memo.parent.glob("codes-*.json"))) == 2
