"""One run of the analyzer: a flake8 invocation, or one ``flake8-mha check``.

A project-wide table rebuilt from every file's stamp (size, time) at each
use costs one ``stat`` per project file each time a file asks for it: over a
project of N files, N x N.  A frontend opens a run where it knows the files
hold still until the run ends (flake8 reads its options once per
invocation; ``check`` reads every file before it writes any fix), and such
tables are then built once per run.  A long-lived process (an editor's
flake8) opens a new run at each lint, so what changed on disk between lints
is read again.

Outside a run (the engine called directly, as tests and embeddings do)
``current()`` is 0 and nothing is kept: every use re-reads the stamps.
"""

from __future__ import annotations

import contextlib

_RUN = [0, 0]  # [the run in progress (0: none), the last run's number]


def start() -> int:
    """A new run begins (tables kept for an earlier one are stale): its number."""
    _RUN[1] += 1
    _RUN[0] = _RUN[1]
    return _RUN[0]


def stop(run: int) -> None:
    """Run ``run`` is over (nothing, if a later one has begun since)."""
    if _RUN[0] == run:
        _RUN[0] = 0


@contextlib.contextmanager
def held():
    """A run for the ``with`` block (``check`` reads every file before it
    writes any fix, after the block)."""
    run = start()
    try:
        yield run
    finally:
        stop(run)


def current() -> int:
    """The run in progress (0: none, keep nothing)."""
    return _RUN[0]


def once(table: dict, key, compute, *args):
    """``compute(*args)``, kept in ``table`` under ``key`` for the rest of the
    run in progress; outside a run, computed at each call."""
    run = _RUN[0]
    kept = table.get(key) if run else None
    if kept is not None and kept[0] == run:
        return kept[1]
    value = compute(*args)
    if run:
        if len(table) >= 64:
            table.clear()
        table[key] = (run, value)
    return value
