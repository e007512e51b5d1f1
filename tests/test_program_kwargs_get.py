"""Issue 26, item 3: a flag a function reads back from its ``**kwargs`` is
what its callers pass under that keyword.

``fixtures/program_calls/kwargs_get``: funasr's SenseVoice attention reads
``is_causal = kwargs.get("is_causal", False)``, sets it only where it drops
the mask, and its one caller passes ``is_causal=False``: clean (it was a
false MHA006).  ``attend_flagged``'s caller passes ``is_causal=True`` with a
mask: MHA006 stands, in the core, per file, over the package and through
``check``."""
from __future__ import annotations

from fixture_expect import assert_package_runs, write_package

from flake8_mha.lint.engine import analyze_file

PKG = "fixtures/program_calls/kwargs_get"


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(PKG, [("attend.py", 19, 12, "MHA006")])


CORE = '''\
import torch.nn.functional as F


def attend(q, k, v, mask=None, **kwargs):
    CHANGE
    is_causal = kwargs.get("is_causal", False)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
'''

CALLER = '''\
from .core import attend


def encode(q, k, v, keep):
    return attend(q, k, v, keep, is_causal=False)
'''


def _found(tmp_path, change):
    pkg = write_package(tmp_path / "pkg", {
        "core.py": CORE.replace("CHANGE", change), "enc.py": CALLER})
    return [(f.code, f.line, f.col) for f in analyze_file(str(pkg / "core.py"), ["MHA006"])]




def test_keywords_changed_in_the_function_are_not_the_callers(tmp_path):
    """``kwargs.update(...)`` or ``kwargs["is_causal"] = ...`` before the
    read: the value is no longer what the callers passed, unknown."""
    assert _found(tmp_path / "a", "pass") == []
    assert _found(tmp_path / "b", "kwargs.update(is_causal=True)") == [("MHA006", 7, 12)]
    assert _found(tmp_path / "c", "kwargs['is_causal'] = True") == [("MHA006", 7, 12)]
