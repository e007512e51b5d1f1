"""Issue 28, items 2, 7, 8 and 9: flake8's and ruff's habits in ``check``,
mistakes that no longer pass in silence, paths users can use, and the smaller
doors.  Each test drives the real client: ``flake8-mha`` and flake8 as
subprocesses, git for ``.gitignore`` and ``git apply``."""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))

ONE_001 = "import torch.nn as nn\n\nlayer = nn.MultiheadAttention(64, 8)\n"
MSG_001 = ("MultiheadAttention built without batch_first: (N, L, E) input silently mixes "
           "samples across the batch")
LINE_001 = f"3:9: MHA001 {MSG_001}"


def write(path: pathlib.Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")


def mha(*args: str, cwd, stdin: str = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", *args], cwd=cwd,
                          capture_output=True, text=True, env=ENV, timeout=300, input=stdin)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def flake8(*args: str, cwd, stdin: str = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flake8", *args], cwd=cwd, capture_output=True,
                          text=True, env=ENV, timeout=300, input=stdin)


def git(*args: str, cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env)


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


# -- item 2: flake8's and ruff's options ----------------------------------------------------

def test_per_file_ignores_on_the_command_line(tmp_path):
    write(tmp_path / "src" / "a.py", ONE_001)
    write(tmp_path / "tests" / "t.py", ONE_001)
    proc = mha("check", "--isolated", "--per-file-ignores", "tests/*:MHA001", ".", cwd=tmp_path)
    assert proc.stdout.splitlines() == [f"src/a.py:{LINE_001}"]
    theirs = flake8("--isolated", "--select", "MHA", "--per-file-ignores", "tests/*:MHA001", ".",
                    cwd=tmp_path)
    assert theirs.stdout.splitlines() == [f"./src/a.py:{LINE_001}"]


def test_exclude_replaces_the_defaults_and_extend_exclude_adds(tmp_path):
    write(tmp_path / "build" / "b.py", ONE_001)
    write(tmp_path / "legacy" / "l.py", ONE_001)
    write(tmp_path / "m.py", ONE_001)
    assert mha("check", "--isolated", ".", cwd=tmp_path).stdout.splitlines() == [
        f"m.py:{LINE_001}", f"legacy/l.py:{LINE_001}"]
    # --exclude replaces the defaults, as flake8's does: build/ is walked again
    assert mha("check", "--isolated", "--exclude", "legacy", ".", cwd=tmp_path
               ).stdout.splitlines() == [f"m.py:{LINE_001}", f"build/b.py:{LINE_001}"]
    assert mha("check", "--isolated", "--extend-exclude", "legacy", ".", cwd=tmp_path
               ).stdout.splitlines() == [f"m.py:{LINE_001}"]


def test_exit_zero_count_and_quiet(tmp_path):
    write(tmp_path / "a.py", ONE_001)
    write(tmp_path / "b.py", ONE_001 + "other = nn.MultiheadAttention(64, 8)\n")
    proc = mha("check", "--isolated", "--exit-zero", ".", cwd=tmp_path)
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 3
    proc = mha("check", "--isolated", "--count", ".", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout.splitlines()[-1] == "3"
    assert proc.stdout.splitlines()[-1] == flake8(
        "--isolated", "--select", "MHA", "--count", ".", cwd=tmp_path).stdout.splitlines()[-1]
    proc = mha("check", "--isolated", "-q", ".", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (1, "a.py\nb.py\n")
    proc = mha("check", "--isolated", "-qq", ".", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (1, "")
    # --exit-zero does not hide a usage error
    assert mha("check", "--exit-zero", "nope.py", cwd=tmp_path).returncode == 2


def test_show_source_prints_what_flake8_prints(tmp_path):
    write(tmp_path / "a.py", "import torch.nn as nn\nif True:\n\tlayer = nn.MultiheadAttention(64, 8)\n"
          "x = nn.MultiheadAttention(64, 8)\n")
    ours = mha("check", "--isolated", "--show-source", "a.py", cwd=tmp_path)
    theirs = flake8("--isolated", "--select", "MHA", "--show-source", "a.py", cwd=tmp_path)
    assert ours.stdout == theirs.stdout
    assert "\tlayer = nn.MultiheadAttention(64, 8)\n\t        ^\n" in ours.stdout


def test_stdin_with_a_display_name_as_flake8_reads_it(tmp_path):
    write(tmp_path / "pkg" / "m.py", "")  # the editor's file on disk may be stale
    ours = mha("check", "--isolated", "--stdin-display-name", "pkg/m.py", "-", cwd=tmp_path,
               stdin=ONE_001)
    theirs = flake8("--isolated", "--select", "MHA", "--stdin-display-name", "pkg/m.py", "-",
                    cwd=tmp_path, stdin=ONE_001)
    assert ours.stdout.splitlines() == theirs.stdout.splitlines() == [f"pkg/m.py:{LINE_001}"]
    assert ours.returncode == 1
    proc = mha("check", "--isolated", "-", cwd=tmp_path, stdin=ONE_001)
    assert proc.stdout.splitlines() == [f"stdin:{LINE_001}"]
    proc = mha("check", "--isolated", "--fix", "-", cwd=tmp_path, stdin=ONE_001)
    assert proc.returncode == 2
    assert proc.stderr == "flake8-mha check: error: --fix cannot write to stdin (-); use --diff\n"


def test_stdin_diff(tmp_path):
    source = (DATA / "bad_model.py").read_text()
    proc = mha("check", "--isolated", "--diff", "--stdin-display-name", "model.py", "-",
               cwd=tmp_path, stdin=source)
    assert proc.returncode == 1
    assert proc.stdout.startswith("--- model.py\n+++ model.py\n")


# -- item 7: mistakes that no longer pass in silence ---------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--select", "MHX"], "--select: 'MHX' matches no flake8-mha code (MHA000..MHA9xx)"),
    (["--select", "mha001"], "--select: 'mha001' is not a code prefix such as MHA, MHA0 or "
                             "MHA001 (codes are upper case)"),
    (["--ignore", "E501"], "--ignore: 'E501' matches no flake8-mha code (MHA000..MHA9xx)"),
    (["--extend-select", "MHA999"], "--extend-select: 'MHA999' matches no flake8-mha code "
                                    "(MHA000..MHA9xx)"),
    (["--per-file-ignores", "a.py:MHX1"], "--per-file-ignores: 'MHX1' matches no flake8-mha "
                                          "code (MHA000..MHA9xx)"),
])
def test_unknown_codes_are_usage_errors(tmp_path, args, message):
    write(tmp_path / "a.py", ONE_001)
    proc = mha("check", "--isolated", *args, "a.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines() == [f"flake8-mha check: error: {message}"]


@pytest.mark.parametrize("prefix", ["M", "MHA", "MHA0", "MHA00", "MHA9", "MHA011"])
def test_prefixes_of_our_codes_are_accepted(tmp_path, prefix):
    write(tmp_path / "a.py", ONE_001)
    assert mha("check", "--isolated", "--select", prefix, "a.py", cwd=tmp_path).returncode in (0, 1)


def test_a_folder_without_python_files_is_a_warning(tmp_path):
    write(tmp_path / "docs" / "index.md", "# docs\n")
    proc = mha("check", "--isolated", "docs", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr == "flake8-mha check: warning: no Python files found under docs\n"


def test_confirm_usage_errors_are_one_line(tmp_path):
    write(tmp_path / "a.py", ONE_001)
    proc = mha("confirm", "--fail-on", "maybe", "a.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines() == [
        "flake8-mha confirm: error: argument --fail-on: invalid choice: 'maybe' "
        "(choose from 'confirmed', 'proven', 'none')"]


# -- item 8: paths users can use -------------------------------------------------------------

def test_github_and_text_name_paths_without_dot_slash(tmp_path):
    write(tmp_path / "mypkg" / "model.py", ONE_001)
    proc = mha("check", "--isolated", "--format", "github", ".", cwd=tmp_path)
    assert proc.stdout.startswith("::error file=mypkg/model.py,line=3,col=9,title=MHA001::")
    assert mha("check", "--isolated", ".", cwd=tmp_path).stdout.startswith("mypkg/model.py:3:9:")
    doc = json.loads(mha("check", "--isolated", "--format", "json", "./mypkg", cwd=tmp_path
                         ).stdout)
    assert doc["findings"][0]["path"] == "mypkg/model.py"


@needs_git
def test_diff_of_a_directory_goes_through_git_apply(tmp_path):
    shutil.copy(DATA / "bad_model.py", tmp_path / "model.py")
    write(tmp_path / "mypkg" / "block.py", (DATA / "bad_model.py").read_text())
    git("init", "-q", cwd=tmp_path)
    diff = mha("check", "--isolated", "--diff", ".", cwd=tmp_path)
    assert diff.returncode == 1
    assert "--- mypkg/block.py\n+++ mypkg/block.py\n" in diff.stdout
    applied = subprocess.run(["git", "apply", "-p0", "-"], cwd=tmp_path, input=diff.stdout,
                             capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    # what was fixed is gone; what --fix would not fix is still there
    after = mha("check", "--isolated", "--diff", ".", cwd=tmp_path)
    assert (after.returncode, after.stdout) == (0, "")


def test_cross_file_messages_name_a_path_that_can_be_clicked(tmp_path):
    write(tmp_path / "src" / "acme" / "__init__.py", "")
    write(tmp_path / "src" / "acme" / "layers" / "__init__.py", "")
    write(tmp_path / "src" / "acme" / "layers" / "attn.py", """\
        import torch.nn.functional as F


        def attend(q, k, v, mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        """)
    write(tmp_path / "src" / "acme" / "model.py", """\
        \"\"\"Runs attention through acme's scaled_dot_product_attention helper.\"\"\"
        import torch
        from acme.layers.attn import attend


        def run(q, k, v, tokens, pad_id):
            return attend(q, k, v, tokens == pad_id)
        """)
    proc = mha("check", "--isolated", "--no-cache", "src", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "at src/acme/layers/attn.py:5 through attend()" in proc.stdout
    target = tmp_path / "src" / "acme" / "layers" / "attn.py"
    assert target.is_file()  # the named path, from where the command ran


# -- item 9: the smaller doors ----------------------------------------------------------------

def test_explain_help_and_list(tmp_path):
    for flag in ("-h", "--help"):
        proc = mha("explain", flag, cwd=tmp_path)
        assert proc.returncode == 0 and proc.stdout.startswith("usage: flake8-mha explain")
    proc = mha("explain", "--list", cwd=tmp_path)
    assert proc.returncode == 0
    codes = [line.split()[0] for line in proc.stdout.splitlines()]
    from flake8_mha.rules.base import REGISTRY, all_rules
    from flake8_mha.rules.runtime import RUNTIME

    all_rules()
    assert codes == sorted({*REGISTRY, *RUNTIME})
    assert "MHA001  batch-first-unset" in proc.stdout.splitlines()
    assert "MHA901  fastpath-blocker  (opt-in)" in proc.stdout.splitlines()
    proc = mha("explain", cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1


@pytest.mark.parametrize("source", [
    "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8\n",
    "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8)\n  y = 2\n",
    "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8)\nif attn:\ny = 2\n",
    "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8)\nx = 'abc\n",
    "import torch.nn as nn\ndef f(:\n    nn.MultiheadAttention(64, 8)\n",
])
def test_syntax_errors_read_as_flake8_s(tmp_path, source):
    (tmp_path / "broken.py").write_text(source)
    ours = mha("check", "--isolated", "broken.py", cwd=tmp_path)
    theirs = flake8("--isolated", "--select", "E999", "broken.py", cwd=tmp_path)
    assert ours.returncode == 2
    assert ours.stderr.splitlines() == theirs.stdout.splitlines()
    assert len(ours.stderr.splitlines()) == 1


@needs_git
def test_gitignore_is_honoured_as_git_reads_it(tmp_path):
    files = ["model.py", "wandb/run-1/files/code/model.py", "pkg/a.py", "pkg/gen/a_pb2.py",
             "pkg/gen/keep.py", "pkg/sub/.cache/x.py", "notes/n.py", "deep/er/build/x.py",
             "data/raw/x.py", "data/keep/x.py", "docs/x.py", "space .py"]
    for rel in files:
        write(tmp_path / rel, ONE_001)
    write(tmp_path / ".gitignore", """\
        # run folders of an experiment tracker
        wandb/
        *_pb2.py
        .cache
        /notes
        **/build/
        data/*
        !data/keep/
        space\\ .py
        """)
    write(tmp_path / "pkg" / "gen" / ".gitignore", "*\n!keep.py\n!.gitignore\n")
    write(tmp_path / "docs" / ".gitignore", "x.py\n")
    git("init", "-q", cwd=tmp_path)
    listed = git("ls-files", "--others", "--exclude-standard", cwd=tmp_path).stdout.splitlines()
    gits = sorted(p for p in listed if p.endswith(".py"))
    proc = mha("check", "--isolated", "--exclude", "", ".", cwd=tmp_path)
    ours = sorted({line.split(":")[0] for line in proc.stdout.splitlines()})
    assert ours == gits
    assert "model.py" in ours and "wandb/run-1/files/code/model.py" not in ours
    proc = mha("check", "--isolated", "--exclude", "", "--no-respect-gitignore", ".", cwd=tmp_path)
    assert len({line.split(":")[0] for line in proc.stdout.splitlines()}) == len(files)


def test_a_file_named_on_the_command_line_is_checked_even_if_ignored(tmp_path):
    write(tmp_path / "wandb" / "m.py", ONE_001)
    write(tmp_path / ".gitignore", "wandb/\n")
    (tmp_path / ".git").mkdir()
    assert mha("check", "--isolated", ".", cwd=tmp_path).stdout == ""
    assert mha("check", "--isolated", "wandb/m.py", cwd=tmp_path).stdout.splitlines() == [
        f"wandb/m.py:{LINE_001}"]


@pytest.mark.parametrize("command", [
    ["check", "--output-file", "{missing}/report.txt"],
    ["confirm", "--json", "{missing}/report.json"],
])
def test_no_folder_is_made_for_a_report(tmp_path, command):
    write(tmp_path / "a.py", ONE_001)
    missing = tmp_path / "nonexistent" / "dir"
    args = [a.format(missing=missing) for a in command]
    proc = mha(*args, "a.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    option = args[1]
    assert proc.stderr.splitlines() == [
        f"flake8-mha {args[0]}: error: {option}: no such directory: {missing}"]
    assert not (tmp_path / "nonexistent").exists()
