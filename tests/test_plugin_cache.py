"""Issue 30 target 8: the flake8 plugin reads and writes the results cache
that ``flake8-mha check`` keeps (``.flake8-mha-cache`` at the project root),
on by default; ``--mha-no-cache`` (or ``mha-no-cache = true`` in flake8's
configuration) turns it off.  Every test runs flake8 itself, in a fresh
process, in a project made under ``tmp_path``."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
ZOO = ROOT / "fixtures" / "program_calls" / "zoo"
CACHE = ".flake8-mha-cache"

# flake8 with the engine made unusable: a file the plugin analyses reports
# MHA000 ("could not analyze this file"), so a run that prints no MHA000 read
# every finding from the cache
NO_ANALYSIS = """
import sys
import flake8_mha.lint.engine as engine

def refuse(*args, **kwargs):
    raise RuntimeError("analysed")

engine.analyze_source = refuse
from flake8.main.cli import main
main(sys.argv[1:])
"""


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def flake8(cwd, *args, analyse=True):
    argv = [sys.executable, "-m", "flake8"] if analyse else [sys.executable, "-c", NO_ANALYSIS]
    proc = subprocess.run(
        [*argv, "--select", "MHA", "-j", "1", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env=_env(),
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


def entries(root: pathlib.Path):
    """The cache's result files (not its manifests, summaries or codes)."""
    return {
        p: p.stat().st_ino
        for p in (root / CACHE).glob("??/*.json")
        if not p.name.startswith(("deps-", "sum-"))
    }


@pytest.fixture
def project(tmp_path):
    """The zoo's tower -> blocks -> attn chain, in a project of its own."""
    (tmp_path / "setup.cfg").write_text("[flake8]\n")
    pkg = tmp_path / "zoo"
    pkg.mkdir()
    for name in ("__init__.py", "attn.py", "blocks.py", "tower.py", "local.py"):
        (pkg / name).write_text((ZOO / name).read_text())
    return tmp_path


def test_a_second_run_reads_the_cache_and_prints_the_same(project):
    first = flake8(project, "zoo")
    assert " MHA002 " in first  # the zoo's findings
    made = entries(project)
    assert made, "the first run wrote no entry at the project root"
    # the second run cannot analyse: what it prints came from the cache
    second = flake8(project, "zoo", analyse=False)
    assert second == first
    assert "MHA000" not in second
    assert entries(project) == made  # read, not written again


def test_the_cache_is_at_the_project_root_whatever_the_folder_run_from(project):
    flake8(project / "zoo", ".")
    assert entries(project)
    assert not (project / "zoo" / CACHE).exists()


def test_an_edit_to_an_imported_file_changes_the_callers_findings(project):
    """tower.py names no attention word; its findings come through blocks.py
    and attn.py.  An edit of attn.py (the wrapper inverts the mask) changes
    tower.py's findings on the next flake8 run, though tower.py is unchanged."""
    before = flake8(project, "zoo/tower.py")
    assert before == flake8(project, "zoo/tower.py", analyse=False)
    assert ":18:" in before and " MHA002 " in before
    attn = project / "zoo" / "attn.py"
    attn.write_text(attn.read_text().replace("attn_mask=attn_mask,", "attn_mask=~attn_mask,"))
    after = flake8(project, "zoo/tower.py")
    assert after != before
    assert ":19:" in after and " MHA002 " in after
    # and that result is cached in turn
    assert flake8(project, "zoo/tower.py", analyse=False) == after


def test_a_tree_copied_with_its_cache_checks_its_own_files(project, tmp_path_factory):
    """The manifests name the imported files relative to the project root:
    a copy of the tree with its cache (a CI cache restored into another
    checkout) reads its entries while its files are the same, and an edit of
    the copy's wrapper changes the copy's findings, not the original's."""
    import json
    import shutil

    before = flake8(project, "zoo/tower.py")
    manifests = list((project / CACHE).glob("??/deps-*.json"))
    assert manifests
    for m in manifests:
        listed = json.loads(m.read_text())
        names = listed["value"]
        assert names and all(not os.path.isabs(n) for n in names), names
    copy = tmp_path_factory.mktemp("copy") / "tree"
    shutil.copytree(project, copy)
    assert flake8(copy, "zoo/tower.py", analyse=False) == before  # the same files: read
    attn = copy / "zoo" / "attn.py"
    attn.write_text(attn.read_text().replace("attn_mask=attn_mask,", "attn_mask=~attn_mask,"))
    after = flake8(copy, "zoo/tower.py")
    assert after != before and ":19:" in after and " MHA002 " in after
    assert flake8(project, "zoo/tower.py", analyse=False) == before


def test_no_cache_writes_nothing(project):
    out = flake8(project, "--mha-no-cache", "zoo")
    assert " MHA002 " in out
    assert not (project / CACHE).exists()
    # and it analyses: the refusing engine shows through
    assert "MHA000" in flake8(project, "--mha-no-cache", "zoo", analyse=False)


def test_no_cache_from_the_configuration(project):
    (project / "setup.cfg").write_text("[flake8]\nmha-no-cache = true\n")
    assert " MHA002 " in flake8(project, "zoo")
    assert not (project / CACHE).exists()


def test_select_and_noqa_still_decide_what_is_shown(project):
    """The entry holds every code; flake8 filters the same entry each run."""
    every = flake8(project, "zoo")
    assert " MHA006 " in every and " MHA002 " in every
    only = flake8(project, "zoo", "--extend-ignore", "MHA006", analyse=False)
    assert " MHA006 " not in only and " MHA002 " in only
    tower = project / "zoo" / "tower.py"
    lines = tower.read_text().splitlines()
    lines[17] += "  # noqa: MHA002"
    tower.write_text("\n".join(lines) + "\n")
    assert ":18:" not in flake8(project, "zoo/tower.py")


def test_the_fixtures_cached_and_uncached_print_the_same(tmp_path):
    """Every fixture: the plugin's cold cached run, its warm run (which
    cannot analyse) and a run without the cache print the same report."""
    (tmp_path / "setup.cfg").write_text("")
    fixtures = str(ROOT / "fixtures")
    uncached = flake8(tmp_path, "--mha-no-cache", fixtures)
    assert uncached.count("\n") > 50  # the fixtures' findings
    assert flake8(tmp_path, fixtures) == uncached
    assert flake8(tmp_path, fixtures, analyse=False) == uncached
