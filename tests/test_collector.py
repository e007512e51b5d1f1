"""The plugin and the garbage collector of flake8's process (core/collector.py):
collection is paused only while a file is analysed, is back on afterwards
(also when the analysis fails), and what the first analysis imported is moved
to the permanent generation once.  Each check runs in a fresh process, whose
collector state no other test has touched."""
from __future__ import annotations

import subprocess
import sys
import textwrap

BAD = "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8)\n"


def _run(body: str) -> str:
    code = textwrap.dedent(body)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_collection_is_on_after_a_file_and_imports_are_frozen_once():
    out = _run(f"""
        import gc
        from flake8_mha.frontends.plugin import MHAChecker
        print(gc.get_freeze_count() == 0)
        found = list(MHAChecker(None, {BAD!r}.splitlines(True), "x.py").run())
        # the first file imported the analyzer: nothing frozen yet (a one-file run pays nothing)
        print(found[0][2].split()[0], gc.isenabled(), gc.get_freeze_count())
        list(MHAChecker(None, {BAD!r}.splitlines(True), "y.py").run())
        frozen = gc.get_freeze_count()
        print(frozen > 10000)
        keep = [[i] for i in range(1000)]
        list(MHAChecker(None, {BAD!r}.splitlines(True), "z.py").run())
        print(gc.get_freeze_count() == frozen, gc.isenabled())
    """)
    assert out.split("\n") == ["True", "MHA001 True 0", "True", "True True"]


def test_a_file_without_attention_freezes_nothing():
    out = _run("""
        import gc
        from flake8_mha.frontends.plugin import MHAChecker
        list(MHAChecker(None, ["x = 1\\n"], "x.py").run())
        print(gc.get_freeze_count(), gc.isenabled())
    """)
    assert out == "0 True"


def test_collection_is_back_on_when_the_analysis_raises():
    out = _run(f"""
        import gc
        import flake8_mha.app.pipeline as pipeline
        from flake8_mha.frontends.plugin import MHAChecker

        def boom(*a, **k):
            assert not gc.isenabled()
            raise RuntimeError("boom")

        pipeline.analyze_for_flake8 = boom
        found = list(MHAChecker(None, {BAD!r}.splitlines(True), "x.py").run())
        print(found[0][2].split()[0], gc.isenabled())
    """)
    assert out == "MHA000 True"
