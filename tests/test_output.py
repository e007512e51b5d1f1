"""The machine-readable formats: json (versioned schema), sarif (validated
against the official SARIF 2.1.0 schema), github workflow commands."""
from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"


def run(*args: str, cwd) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture
def work(tmp_path):
    (tmp_path / "src" / "my models").mkdir(parents=True)
    shutil.copy(DATA / "bad_model.py", tmp_path / "src" / "my models" / "bad_model.py")
    return tmp_path


# -- json ------------------------------------------------------------------------------

def test_json_schema_version_1(work):
    proc = run("check", "--format", "json", "src", cwd=work)
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert list(doc) == ["version", "tool", "findings", "errors", "statistics"]
    assert doc["version"] == 1
    assert doc["tool"]["name"] == "flake8-mha"
    first = doc["findings"][0]
    assert list(first) == ["path", "line", "col", "cell", "cell_index", "code", "name", "message",
                           "fixable", "evidence"]
    assert [(f["path"], f["line"], f["col"], f["code"], f["fixable"]) for f in doc["findings"]] == [
        ("src/my models/bad_model.py", 10, 21, "MHA001", False),
        ("src/my models/bad_model.py", 14, 18, "MHA102", True),
        ("src/my models/bad_model.py", 17, 13, "MHA006", True),
        ("src/my models/bad_model.py", 18, 13, "MHA007", True),
    ]
    assert first["name"] == "batch-first-unset"
    assert first["cell"] is None and first["cell_index"] is None
    assert first["evidence"]["module"] == "MultiheadAttention"
    assert doc["errors"] == []
    assert doc["statistics"] == {"MHA001": 1, "MHA006": 1, "MHA007": 1, "MHA102": 1}


def test_json_carries_errors_too(tmp_path):
    (tmp_path / "broken.py").write_text("import torch.nn as nn\nnn.MultiheadAttention(\n")
    proc = run("check", "--format", "json", "broken.py", cwd=tmp_path)
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    assert doc["findings"] == []
    assert doc["errors"] == [{"path": "broken.py", "line": 2, "col": 23, "cell": None,
                              "cell_index": None,
                              "message": "SyntaxError: '(' was never closed"}]
    assert proc.stderr.splitlines() == ["broken.py:2:23: E999 SyntaxError: '(' was never closed"]


def test_json_clean_run(tmp_path):
    shutil.copy(DATA / "good_model.py", tmp_path / "good_model.py")
    proc = run("check", "--format", "json", "good_model.py", cwd=tmp_path)
    assert proc.returncode == 0
    doc = json.loads(proc.stdout)
    assert (doc["findings"], doc["errors"], doc["statistics"]) == ([], [], {})


# -- sarif -----------------------------------------------------------------------------

def _validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _errors(doc):
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in _validator().iter_errors(doc)]


def test_sarif_is_valid_and_complete(work):
    proc = run("check", "--format", "sarif", "src", cwd=work)
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert _errors(doc) == []
    assert doc["version"] == "2.1.0"
    (sarif_run,) = doc["runs"]
    driver = sarif_run["tool"]["driver"]
    assert driver["name"] == "flake8-mha"
    rules = {r["id"]: r for r in driver["rules"]}
    assert {"MHA001", "MHA006", "MHA007", "MHA102"} <= set(rules)
    rule = rules["MHA001"]
    assert rule["name"] == "batch-first-unset"
    assert rule["helpUri"].endswith("/docs/rules/MHA001.md")
    assert rule["shortDescription"]["text"].startswith("Flags `nn.MultiheadAttention`")
    assert "batch_first" in rule["fullDescription"]["text"]
    assert rule["help"]["text"].startswith("# MHA001: batch-first-unset")
    assert rule["defaultConfiguration"]["level"] == "error"
    assert rules["MHA102"]["defaultConfiguration"]["level"] == "warning"
    results = sarif_run["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("MHA001", "error"), ("MHA102", "warning"), ("MHA006", "error"), ("MHA007", "error")]
    for r in results:
        assert driver["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
    loc = results[0]["locations"][0]["physicalLocation"]
    # relative, forward slashes, URI-escaped: what GitHub code scanning maps to the repository
    assert loc["artifactLocation"] == {"uri": "src/my%20models/bad_model.py",
                                       "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 10, "startColumn": 21}
    assert results[0]["message"]["text"].startswith("MultiheadAttention built without batch_first")
    assert sarif_run["invocations"][0]["executionSuccessful"] is True
    assert sarif_run["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/")


def test_sarif_lists_every_selected_rule_even_without_results(tmp_path):
    shutil.copy(DATA / "good_model.py", tmp_path / "good_model.py")
    proc = run("check", "--format", "sarif", "--select", "MHA", "good_model.py", cwd=tmp_path)
    doc = json.loads(proc.stdout)
    assert _errors(doc) == []
    ids = [r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]]
    assert "MHA901" in ids and ids == sorted(ids)
    assert doc["runs"][0]["results"] == []


def test_sarif_reports_unanalyzable_files_as_notifications(tmp_path):
    (tmp_path / "broken.py").write_text("import torch.nn as nn\nnn.MultiheadAttention(\n")
    proc = run("check", "--format", "sarif", "broken.py", cwd=tmp_path)
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    assert _errors(doc) == []
    inv = doc["runs"][0]["invocations"][0]
    assert inv["executionSuccessful"] is False
    (note,) = inv["toolExecutionNotifications"]
    assert note["level"] == "error"
    assert note["message"]["text"] == "broken.py:2:23: E999 SyntaxError: '(' was never closed"


def test_sarif_schema_rejects_a_broken_log():
    # the validator is real: a result without a message is refused
    bad = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}},
                                         "results": [{"ruleId": "MHA001"}]}]}
    assert any("message" in e for e in _errors(bad))


# -- github ------------------------------------------------------------------------------

def test_github_workflow_commands(work):
    proc = run("check", "--format", "github", "src", cwd=work)
    lines = proc.stdout.splitlines()
    assert lines[0] == (
        "::error file=src/my models/bad_model.py,line=10,col=21,title=MHA001::"
        "MultiheadAttention built without batch_first: (N, L, E) input silently mixes samples "
        "across the batch")
    # the level follows the rule's severity: MHA102 is a performance rule
    assert [line.split(" ", 1)[0] + " " + line.split("title=")[1][:6] for line in lines] == [
        "::error MHA001", "::warning MHA102", "::error MHA006", "::error MHA007"]


def test_github_levels_follow_each_rules_severity(tmp_path):
    (tmp_path / "m.py").write_text(
        "import torch.nn as nn\n\n"
        "a = nn.MultiheadAttention(64, 8)\n"
        "b = nn.MultiheadAttention(64, 3, batch_first=True)\n"
        "c = nn.MultiheadAttention(64, 8, batch_first=False)\n")
    proc = run("check", "--format", "github", "--select", "MHA", "m.py", cwd=tmp_path)
    levels = [(line.split(" ", 1)[0], line.split("title=")[1][:6])
              for line in proc.stdout.splitlines()]
    assert levels == [("::error", "MHA001"), ("::error", "MHA008"), ("::warning", "MHA101"),
                      ("::notice", "MHA902")]


def test_github_escapes_properties_and_data():
    from flake8_mha.core.findings import Finding
    from flake8_mha.app.output import Item, github_line

    item = Item(Finding("MHA001", 3, 4, "50% off,\nnew line: yes", "a,b:c.py"))
    assert github_line(item) == ("::error file=a%2Cb%3Ac.py,line=3,col=4,title=MHA001::"
                                 "50%25 off,%0Anew line: yes")
