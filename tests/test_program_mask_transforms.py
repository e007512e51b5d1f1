"""Issue 26: mask builders of another file that transform the mask they are passed.

``fixtures/program_calls/mask_transforms``: ``invert(mask)``,
``for_heads(mask, heads)`` and ``additive(keep, dtype)`` live in masks.py;
model.py passes them its own masks.  Each call is judged with the caller's
mask bound to the builder's parameter, as a helper of the caller's own file
is: an inverted keep mask and an ignore mask expanded over heads reach SDPA
(MHA002); the inverted ignore mask, the expanded keep mask and the additive
mask are correct."""
from __future__ import annotations

import json
import shutil

import pytest

from fixture_expect import FIXTURES, ROOT, expected, flake8_run
from flake8_mha.lint import engine

PKG = FIXTURES / "program_calls" / "mask_transforms"
FILES = sorted(PKG.glob("*.py"))
REL = "fixtures/program_calls/mask_transforms/"
TAIL = "means True = ignore; scaled_dot_product_attention treats True as attend (invert it: ~mask)"
MESSAGES = {
    ("model.py", 9, 12, "MHA002"): f"mask from line 9 (invert() -> {REL}masks.py:9: ~mask) {TAIL}",
    ("model.py", 19, 12, "MHA002"): f"mask from line 18 (tokens == pad_id) {TAIL}",
}


def test_the_fixture_states_what_the_messages_say():
    assert {(p.name,) + e for p in FILES for e in expected(p)} == set(MESSAGES)


def _flake8(*args):
    status, found = flake8_run(*args)
    return status, {(f.path.rsplit("/", 1)[-1], f.line, f.col, f.code): f.msg for f in found}


def test_flake8_over_the_package():
    assert _flake8(REL) == (1, MESSAGES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_flake8_one_file_at_a_time(path):
    status, got = _flake8(str(path.relative_to(ROOT)))
    want = {k: v for k, v in MESSAGES.items() if k[0] == path.name}
    assert (status, got) == (1 if want else 0, want)


def _found(path):
    return [(f.line, f.col, f.code) for f in engine.analyze_file(str(path))]


def test_the_same_builders_in_the_callers_file_give_the_same_findings(tmp_path):
    # one file: masks.py's functions above model.py's (its imports dropped)
    masks = (PKG / "masks.py").read_text().splitlines()
    model = (PKG / "model.py").read_text().splitlines()
    body = [line for line in model if not line.startswith("from .masks")]
    (tmp_path / "one.py").write_text("\n".join(masks + [""] + body) + "\n")
    moved = len(masks) + 1 - 1  # every model.py line moves down by masks.py's lines, one import gone
    assert _found(tmp_path / "one.py") == [(line + moved, col, code)
                                          for (_, line, col, code) in sorted(MESSAGES)]


def _copy(tmp_path):
    pkg = tmp_path / "mask_transforms"
    shutil.copytree(PKG, pkg)
    return pkg


@pytest.mark.parametrize("change, found", [
    # the builder no longer inverts: the keep mask reaches SDPA as it is, the ignore one too
    (("    return ~mask\n", "    return mask\n"), [(14, 12, "MHA002"), (19, 12, "MHA002")]),
    # the builder inverts what it expands: the ignore mask becomes a keep mask, the keep one an ignore one
    (("    return mask[:, None, None, :]", "    return ~mask[:, None, None, :]"),
     [(9, 12, "MHA002"), (24, 12, "MHA002")]),
    # a builder whose result the analysis cannot tell: nothing is said of its calls
    (("    return ~mask\n", "    return mask.flip(0)\n"), [(19, 12, "MHA002")]),
])
def test_an_edit_of_a_builder_changes_its_callers_findings(tmp_path, change, found):
    pkg = _copy(tmp_path)
    masks = pkg / "masks.py"
    text = masks.read_text()
    assert change[0] in text
    masks.write_text(text.replace(change[0], change[1]))
    assert _found(pkg / "model.py") == found


def test_an_edit_of_a_builder_invalidates_the_cached_finding(tmp_path, monkeypatch, capsys):
    from flake8_mha.frontends.check import main as check_main

    monkeypatch.chdir(tmp_path)
    pkg = _copy(tmp_path)

    def run():
        status = check_main(["--format", "json", "mask_transforms/model.py"])
        return status, [(f["line"], f["code"]) for f in json.loads(capsys.readouterr().out)["findings"]]

    first = run()
    assert first == (1, [(9, "MHA002"), (19, "MHA002")])
    assert run() == first  # from the cache
    masks = pkg / "masks.py"
    masks.write_text(masks.read_text().replace("    return ~mask\n", "    return mask\n"))
    assert run() == (1, [(14, "MHA002"), (19, "MHA002")])
