"""Issue 29, generated inputs: the cache and the notebook reader take any
bytes without raising, and trust nothing they did not write.

- A cache entry, manifest, summary or codes memo replaced by any bytes or any
  JSON value is refused (``load``/``get`` give None), except the exact entry
  that was written.  One byte of a written entry changed is refused too.
- Any JSON value (or any text) as a notebook gives a notebook or one
  ``NotebookError`` line; a notebook ``load`` accepts is scanned, joined and
  placed without raising, and the lint of the file is never an internal error.

Bounded and deterministic (``derandomize=True``), as tests/test_robust_generated.py.
"""
from __future__ import annotations

import json
import os

import pytest

from flake8_mha.app import cache as cache_mod
from flake8_mha.app import notebook as nbk
from flake8_mha.app import pipeline

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SETTINGS = settings(max_examples=150, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))
KEY = "ab" + "0" * 62
CODES = ("MHA001", "MHA102")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                 max_size=4),
    max_leaves=30,
)

FINDING = {"code": "MHA001", "line": 3, "col": 5, "message": "m", "path": "m.py",
           "evidence": {"k": [1, 2]}}
ITEM = {"finding": FINDING, "cell": None, "cell_index": None, "file_line": None,
        "fixable": False}


@pytest.fixture
def store(tmp_path):
    directory = tmp_path / "cache"
    assert cache_mod.usable(str(directory))
    return cache_mod.Cache(str(directory))


def _written(store) -> str:
    store.store(KEY, [ITEM], [])
    path = store._path(KEY)
    assert store.load(KEY, "m.py", CODES)["items"] == [ITEM]
    return path


@SETTINGS
@given(data=st.binary(max_size=300))
def test_any_bytes_as_an_entry_is_refused(tmp_path_factory, data):
    store = cache_mod.Cache(str(tmp_path_factory.mktemp("c")))
    path = store._path(KEY)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)
    assert store.load(KEY, "m.py", CODES) is None
    side = cache_mod.SideStore(store.directory, "deps-")
    with open(side._path(KEY), "wb") as fh:
        fh.write(data)
    assert side.get(KEY) is None


@SETTINGS
@given(value=json_values, where=st.sampled_from(
    ["items", "problems", "finding", "code", "line", "col", "message", "path", "cell",
     "fixable", "sum", "key", "whole"]))
def test_a_written_entry_with_any_field_replaced_is_refused(tmp_path_factory, value, where):
    store = cache_mod.Cache(str(tmp_path_factory.mktemp("c")))
    path = _written(store)
    with open(path, encoding="utf-8") as fh:
        entry = json.load(fh)
    item = entry["items"][0]
    if where in ("items", "problems", "sum", "key"):
        entry[where] = value
    elif where == "whole":
        entry = value
    elif where in ("cell", "fixable", "finding"):
        item[where] = value
    else:
        item["finding"][where] = value
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(entry, fh)
    got = store.load(KEY, "m.py", CODES)
    # refused, unless the value put back is the one that was there
    assert got is None or got["items"] == [ITEM]


@SETTINGS
@given(at=st.integers(0, 10_000), byte=st.integers(0, 255))
def test_one_byte_changed_in_a_written_entry_is_refused(tmp_path_factory, at, byte):
    store = cache_mod.Cache(str(tmp_path_factory.mktemp("c")))
    path = _written(store)
    with open(path, "rb") as fh:
        data = bytearray(fh.read())
    at %= len(data)
    if data[at] == byte:
        return
    data[at] = byte
    with open(path, "wb") as fh:
        fh.write(bytes(data))
    got = store.load(KEY, "m.py", CODES)
    # JSON whitespace aside, any change of content is refused
    assert got is None or got["items"] == [ITEM]


# -- the notebook reader --------------------------------------------------------------------

sources = st.one_of(st.text(max_size=60), st.lists(st.text(max_size=30), max_size=4))
cells = st.fixed_dictionaries(
    {"cell_type": st.sampled_from(["code", "markdown", "raw"]), "source": sources},
    optional={"metadata": st.dictionaries(st.text(max_size=5), json_values, max_size=2),
              "outputs": st.just([])},
)
notebooks = st.fixed_dictionaries(
    {"cells": st.lists(cells | json_values, max_size=4)},
    optional={"metadata": json_values | st.just({"kernelspec": {"language": "python"}}),
              "nbformat": json_values, "nbformat_minor": json_values},
)


def _one_notebook(raw: str, spans_too: bool = False) -> None:
    try:
        nb = nbk.load(raw)
    except nbk.NotebookError as exc:
        assert "\n" not in str(exc) and str(exc)
        return
    if spans_too:  # where the scan says each source is, that source is
        spans = nbk.source_spans(raw)
        for index, cell in enumerate(nb["cells"]):
            span = spans[index]
            assert json.loads(raw[span.start:span.end]) == cell["source"]
            assert [json.loads(raw[a:b]) for a, b in span.elements] == (
                cell["source"] if span.is_list else [cell["source"]])
    src = nbk.Source.of(nb, raw) if nbk.is_python(nb) else None
    if src is not None:
        for line in range(1, src.joined.count("\n") + 2):
            src.place(line)
        assert src.rewritten(src.joined) is None  # nothing changed, nothing written


@SETTINGS
@given(nb=notebooks | json_values, indent=st.sampled_from([None, 1, 2, "\t"]),
       crlf=st.booleans())
def test_any_json_as_a_notebook_is_read_or_refused_in_one_line(nb, indent, crlf):
    raw = json.dumps(nb, indent=indent)
    _one_notebook(raw.replace("\n", "\r\n") if crlf else raw, spans_too=True)


@SETTINGS
@given(raw=st.text(max_size=200))
def test_any_text_as_a_notebook_is_read_or_refused_in_one_line(raw):
    _one_notebook(raw)


@SETTINGS
@given(nb=notebooks)
def test_the_lint_of_any_notebook_is_never_an_internal_error(tmp_path_factory, nb):
    path = str(tmp_path_factory.mktemp("n") / "nb.ipynb")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(nb, fh, indent=1)
    out = pipeline.lint_file((path, CODES, False, "check", None, False))
    assert not any("internal error" in p.message for p in out.problems)
    assert all(len(p.message.splitlines()) == 1 for p in out.problems)
