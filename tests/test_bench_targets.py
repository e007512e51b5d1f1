"""bench/targets.py's logic, without timing anything: which targets a
command measures, the ratio targets 1-3 report, target 9's one-line edit,
the floor's texts and the editor harness's report."""

from __future__ import annotations

import ast
import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def targets():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import targets

        yield targets
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_only_selects_targets_and_every_target_is_measured_by_default(targets):
    assert targets.parse_only("1,3") == {1, 3}
    assert targets.parse_only(None) == set(range(1, 10))
    for n in range(1, 10):  # each has its method
        assert callable(getattr(targets.Bench, f"target{n}"))
    with pytest.raises(SystemExit):
        targets.parse_only("10")


def test_added_ratio_is_the_plugins_added_cost_in_floors():
    sys.path.insert(0, str(ROOT / "bench"))
    import targets

    # flake8 alone 10 s, with the plugin 13 s, the floor adds 2 s: 1.5x the floor
    assert targets.added_ratio(10.0, 13.0, 2.0) == pytest.approx(1.5)
    assert targets.added_ratio(10.0, 10.0, 2.0) == 0
    assert targets.added_ratio(1.0, 2.0, 0.0) == float("inf")


def test_the_edit_is_one_new_line_of_code_and_differs_each_time(targets):
    text = "import torch\n\n\nclass A:\n    pass\n"
    one, two = targets.edited(text, 1), targets.edited(text, 2)
    assert one != two != text
    assert len(one.splitlines()) == len(text.splitlines()) + 1
    ast.parse(one)  # still Python
    assert one.splitlines()[3] == "_edit_marker = 1"  # before the first class
    assert targets.edited("x = 1\n", 3).endswith("_edit_marker = 3\n")


def test_the_table_says_met_and_missed(targets):
    table = targets.render(
        [
            (3, "one file", "1 s", "2 s", "1.20x", "at most 1.5x", True),
            (9, "editor", "1 s", "2 s", "2.00x", "at most 1.3x", False),
        ]
    )
    rows = table.splitlines()[2:]
    assert rows[0].startswith("| 3 |") and rows[0].endswith("| met |")
    assert rows[1].startswith("| 9 |") and rows[1].endswith("| **missed** |")


def test_the_floor_script_parses_the_texts_it_is_given(tmp_path):
    sys.path.insert(0, str(ROOT / "bench"))
    import floors

    texts = tmp_path / "texts.json"
    texts.write_text(json.dumps(["x = 1\n", "def f(a):\n    return a\n"]))
    out = subprocess.run(
        [sys.executable, "-c", floors.FLOOR_SCRIPT, str(texts)],
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(out.stdout)
    assert set(got) == {"import", "parse"} and got["import"] > 0


def test_focused_texts_keep_what_the_engine_parses(targets):
    import floors

    fixture = ROOT / "fixtures" / "MHA002_ignore_mask_to_sdpa.py"
    texts = floors.focused_texts([fixture])
    assert list(texts) == [fixture]
    # same lines (focus keeps lines and columns), and the attention call is kept
    source = fixture.read_text(encoding="utf-8")
    assert texts[fixture].count("\n") == source.count("\n")
    assert "scaled_dot_product_attention" in texts[fixture]


def test_the_editor_harness_relints_in_one_process(targets, tmp_path):
    """The harness lints the file once, then after each edit; its report is
    flake8's (here with the plugin, which finds the fixture's bug)."""
    fixture = ROOT / "fixtures" / "MHA002_ignore_mask_to_sdpa.py"
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            targets.EDITOR_SCRIPT,
            str(fixture),
            "2",
            '["--mha-no-cache"]',
            str(ROOT / "bench"),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env=targets.env_with_path(),
    )
    got = json.loads(out.stdout)
    assert got["relint_wall"] > 0 and got["relint_cpu"] > 0
    assert " MHA002 " in got["report"]
