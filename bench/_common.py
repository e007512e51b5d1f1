"""Shared by the benchmark scripts: corpora, virtualenvs, measuring a command.

Nothing here imports torch: the torch package is found with
``importlib.util.find_spec`` and read as text.
"""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import textwrap
from typing import Dict, List, Optional, Sequence

BENCH = pathlib.Path(__file__).resolve().parent
ROOT = BENCH.parent
VENVS = BENCH / ".venvs"
CACHE = BENCH / ".cache"

# files that use attention densely: what issue 2 calls the attention-dense subset
DENSE = re.compile(rb"MultiheadAttention|Transformer\w*Layer|scaled_dot_product_attention")

# the three environments of the comparison; none sees the system site-packages
VENV_PACKAGES: Dict[str, List[str]] = {
    "base": ["flake8", "libcst"],  # flake8 alone
    "mha": ["flake8", "libcst", "-e", str(ROOT)],  # flake8 + this plugin
    "torchfix": ["flake8", "torchfix"],  # flake8 + TorchFix (pins its own libcst)
}


def shown(path) -> str:
    """A path as a committed file may name it: relative to the repository
    (``bench/.venvs/mha/bin/flake8``), or ``<site-packages>/torch/...`` for an
    installed package; never this machine's absolute path."""
    p = pathlib.Path(str(path))
    if not p.is_absolute():
        return p.as_posix()
    try:
        return p.resolve().relative_to(ROOT.resolve()).as_posix()
    except ValueError:
        pass
    parts = p.parts
    if "site-packages" in parts:
        return "<site-packages>/" + "/".join(parts[parts.index("site-packages") + 1:])
    return f"<{p.name}>"


def shown_command(argv: Sequence[str]) -> str:
    """A command line, for reading, with every absolute path in it made ``shown``."""
    import shlex

    return " ".join(shown(a) if os.path.isabs(str(a)) else shlex.quote(str(a)) for a in argv)


def torch_root() -> pathlib.Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("torch is not installed: the benchmark lints torch's own files")
    return pathlib.Path(list(spec.submodule_search_locations)[0])


def py_files(root: pathlib.Path) -> List[pathlib.Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        out.extend(pathlib.Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py"))
    return out


def dense_files(files: Sequence[pathlib.Path]) -> List[pathlib.Path]:
    return [p for p in files if DENSE.search(p.read_bytes())]


def venv_python(name: str) -> pathlib.Path:
    return VENVS / name / "bin" / "python"


def ensure_venv(name: str, log=print) -> pathlib.Path:
    """Create ``bench/.venvs/NAME`` (no system site-packages) once and install
    its packages from the registry; return its python."""
    py = venv_python(name)
    marker = VENVS / name / ".bench-ready"
    if marker.exists() and py.exists():
        return py
    log(f"creating virtualenv {name} ...")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENVS / name)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", *VENV_PACKAGES[name]], check=True)
    marker.write_text(" ".join(VENV_PACKAGES[name]) + "\n")
    return py


def compile_plugin() -> None:
    """Byte-compile ``flake8_mha`` as ``pip install`` does for a user.  The
    benchmark runs this checkout in editable mode: where the environment sets
    PYTHONDONTWRITEBYTECODE, no ``.pyc`` is ever written, and every process
    would compile the plugin's sixty modules from source (0.15-0.25 s, about
    half of flake8's own time on one file), which no installed copy pays.
    flake8 and libcst, installed by pip, have theirs.  ``__pycache__`` is not
    committed (``.gitignore``); a changed module is compiled again."""
    import compileall

    compileall.compile_dir(str(ROOT / "flake8_mha"), quiet=1)


def venv_versions(name: str) -> Dict[str, str]:
    code = textwrap.dedent("""
        import json, importlib.metadata as md
        out = {}
        for dist in ("flake8", "libcst", "pyflakes", "pycodestyle", "flake8-mha", "TorchFix"):
            try:
                out[dist] = md.version(dist)
            except md.PackageNotFoundError:
                pass
        print(json.dumps(out))
    """)
    # run outside the repository: its egg-info on sys.path would show the plugin everywhere
    res = subprocess.run([str(venv_python(name)), "-c", code], capture_output=True, text=True,
                         check=True, cwd=tempfile.gettempdir())
    return json.loads(res.stdout)


# Runs a command in a fresh process and reports wall time, the CPU time and the
# peak RSS of its process tree (getrusage(RUSAGE_CHILDREN): the largest
# process; with flake8 -j 1 that is the one process that does all the work).
_MEASURE = textwrap.dedent("""
    import json, resource, subprocess, sys, time
    argv = json.loads(sys.argv[1])
    t = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024,
                      "rc": proc.returncode,
                      "stdout": proc.stdout.decode("utf-8", "replace")[-20000:],
                      "stderr": proc.stderr.decode("utf-8", "replace")[-4000:]}))
""")


def measure(argv: Sequence[str], cwd: Optional[pathlib.Path] = None) -> dict:
    res = subprocess.run([sys.executable, "-c", _MEASURE, json.dumps([str(a) for a in argv])],
                         capture_output=True, text=True, check=True,
                         cwd=cwd or tempfile.gettempdir())
    return json.loads(res.stdout)


def median(values: Sequence[float]) -> float:
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def machine() -> str:
    load = os.getloadavg()
    return (f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, "
            f"1-minute load average {load[0]:.1f} when written")
