"""Issue 28, item 3: the opt-in codes (MHA9xx) stay off unless asked for, in
flake8 and in ``check``, under every configuration a user is likely to have:
black's ``ignore = E203,W503`` replaces flake8's default ignore list, which is
where the plugin used to keep them off."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))

OPTIN = """\
import torch.nn as nn

a = nn.MultiheadAttention(64, 8, batch_first=False)
"""
MHA902 = "optin.py:3:5: MHA902 "


def run(tool, *args, cwd):
    command = ["flake8"] if tool == "flake8" else ["flake8_mha.frontends.cli", "check"]
    proc = subprocess.run([sys.executable, "-m", *command, *args], cwd=cwd, capture_output=True,
                          text=True, env=ENV, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    return [line.removeprefix("./") for line in proc.stdout.splitlines()]


CONFIGS = {
    "black's .flake8": ".flake8", "[flake8] in setup.cfg": "setup.cfg",
    "[flake8] in tox.ini": "tox.ini"}


@pytest.fixture(params=list(CONFIGS))
def black_style(tmp_path, request):
    (tmp_path / "optin.py").write_text(OPTIN)
    (tmp_path / CONFIGS[request.param]).write_text(
        "[flake8]\nmax-line-length = 88\nignore = E203,W503\n")
    return tmp_path


@pytest.mark.parametrize("tool", ["flake8", "check"])
def test_a_replaced_ignore_list_does_not_turn_them_on(black_style, tool):
    assert [ln for ln in run(tool, "optin.py", cwd=black_style) if ": MHA9" in ln] == []


@pytest.mark.parametrize("tool", ["flake8", "check"])
@pytest.mark.parametrize("args", [
    ["--select", "MHA901,MHA902"],
    ["--extend-select", "MHA9"],
    ["--enable-extensions", "MHA9"],
    ["--select", "MHA"],
])
def test_asking_for_them_turns_them_on(black_style, tool, args):
    lines = run(tool, *args, "optin.py", cwd=black_style)
    assert any(line.startswith(MHA902) for line in lines), lines


@pytest.mark.parametrize("tool", ["flake8", "check"])
def test_an_ignore_of_another_of_our_codes_does_not_turn_them_on(tmp_path, tool):
    (tmp_path / "optin.py").write_text(OPTIN)
    args = ["--isolated", "--ignore", "MHA102", "optin.py"]
    assert [ln for ln in run(tool, *args, cwd=tmp_path) if ": MHA9" in ln] == []


@pytest.mark.parametrize("tool", ["flake8", "check"])
def test_enable_extensions_keeps_the_user_s_own_extend_ignore(tmp_path, tool):
    (tmp_path / "optin.py").write_text(OPTIN)
    args = ["--isolated", "--enable-extensions", "MHA9", "--extend-ignore", "MHA902", "optin.py"]
    assert [ln for ln in run(tool, *args, cwd=tmp_path) if ": MHA9" in ln] == []


def test_config_keys_ask_for_them_too(tmp_path):
    (tmp_path / "optin.py").write_text(OPTIN)
    (tmp_path / ".flake8").write_text("[flake8]\nignore = E203,W503\nextend-select = MHA902\n")
    assert any(ln.startswith(MHA902) for ln in run("flake8", "optin.py", cwd=tmp_path))
    assert any(ln.startswith(MHA902) for ln in run("check", "optin.py", cwd=tmp_path))
