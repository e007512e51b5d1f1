"""The mask rules' full findings over the fixtures stay byte-for-byte the same.

``tests/test_fixtures.py`` checks code, line and column; this test also pins
the message and the complete evidence dict (what a runtime witness reads) of
every finding of the mask rules (MHA002, MHA003, MHA004, MHA009) over
``fixtures/`` and ``tests/data/``, against ``tests/masks_parity.json``.  It was
written before ``masks.py`` became a package, so that the move could not
change a single finding unnoticed.

A deliberate change to what the mask analysis reports regenerates the
snapshot: ``MHA_UPDATE_PARITY=1 python -m pytest tests/test_masks_parity.py``,
then review the diff of the JSON file like any other change.
"""
from __future__ import annotations

import json
import os

from fixture_expect import FIXTURES, ROOT
from flake8_mha.lint.engine import analyze_source, select_codes

MASK_CODES = ["MHA002", "MHA003", "MHA004", "MHA009"]
SNAPSHOT = ROOT / "tests" / "masks_parity.json"


def _files():
    return sorted(FIXTURES.glob("**/*.py")) + sorted((ROOT / "tests" / "data").glob("**/*.py"))


def _raw():
    out = {}
    for path in _files():
        findings = analyze_source(path.read_text(encoding="utf-8"), str(path), MASK_CODES,
                                  use_prefilter=False)
        rel = path.relative_to(ROOT).as_posix()
        out[rel] = [[f.code, f.line, f.col, f.message, f.evidence] for f in findings]
    return out


def _record():
    # through JSON, as the confirmer and ``--format json`` see the evidence
    return json.loads(json.dumps(_raw(), sort_keys=True))


def test_mask_codes_are_the_mask_rules():
    assert set(MASK_CODES) <= set(select_codes())


def test_mask_findings_match_the_snapshot():
    got = _record()
    if os.environ.get("MHA_UPDATE_PARITY"):
        SNAPSHOT.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    want = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert sorted(got) == sorted(want)
    for rel in want:
        assert got[rel] == want[rel], rel
    # the snapshot is not empty: every mask code fires somewhere with evidence
    codes = {f[0] for found in want.values() for f in found}
    assert codes == set(MASK_CODES)
    assert all(f[4].get("mask") for found in want.values() for f in found)


def test_evidence_values_are_plain_json_types():
    """Typed meanings and kinds reach the evidence as plain strings (the
    confirmer's worker must not need the analysis package to read them)."""
    for found in _raw().values():
        for code, line, col, message, evidence in found:
            for key in ("meaning", "kind", "shape"):
                value = evidence["mask"][key]
                assert value is None or type(value) is str, (code, line, key)
            assert type(evidence["mask"]["by_name"]) is bool
