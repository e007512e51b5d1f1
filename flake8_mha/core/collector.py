"""How the analyzer lives with Python's cyclic garbage collector.

Two costs showed on flake8 over torch's tree (README, Performance; target 1
of bench/targets.py):

* while one file is analysed, its trees (LibCST's, and ``ast``'s of the
  project files summarised for it) are millions of young objects, all alive
  until the file is done; every automatic collection walks them again;
* the modules the plugin imports once (libcst, the rules, the torch API
  tables) are long-lived objects that every full collection of the host
  process walks again, for each of flake8's own files too: it doubled the
  time flake8's own checks spent collecting.

``paused()`` answers the first, ``settle()`` the second.
"""

from __future__ import annotations

import contextlib
import gc

_SETTLED = []
_LOADED = []  # the analyzer (libcst, the rules) is imported: engine.py says so


def loaded() -> None:
    """Called once by the engine's import: there is something to settle."""
    _LOADED.append(True)


@contextlib.contextmanager
def paused():
    """No automatic collection inside; one young-generation collection at the
    end frees what the work left behind (the flow pass's scopes form cycles
    that keep a tree reachable until a collection) at once.  Nested: only the
    outermost collects."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)


def settle() -> None:
    """Once per process, once an earlier file's analysis has imported what
    the analyzer needs (``loaded``; before that this does nothing): move
    every object alive now to the collector's permanent generation
    (``gc.freeze``), after one full collection so that no garbage is kept.
    Those objects live as long as the process anyway; full collections stop
    walking them.  The plugin calls it as a file's analysis starts, so that
    a run over one file (an editor's, a 3 MB generated file) never pays the
    full collection.  What flake8 holds of the file at hand then (its
    ``ast``) is kept for the process too: one file's, once."""
    if _SETTLED or not _LOADED:
        return
    _SETTLED.append(True)
    gc.collect()
    gc.freeze()
