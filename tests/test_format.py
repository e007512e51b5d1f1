"""The package has one formatter: ``ruff format`` (settings in pyproject.toml)."""
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_the_package_is_formatted_by_ruff():
    ruff = shutil.which("ruff") or str(pathlib.Path(sys.executable).parent / "ruff")
    if not pathlib.Path(ruff).exists():
        pytest.fail("ruff is part of the test extra: pip install -e '.[test]'")
    proc = subprocess.run([ruff, "format", "--check", "flake8_mha"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
