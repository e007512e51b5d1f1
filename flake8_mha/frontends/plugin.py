"""The flake8 adapter: options and ``run()``; a thin layer over the lint
pipeline (``pipeline.analyze_for_flake8``), all analysis is in engine.py.

flake8 calls ``MHAChecker(tree, lines, filename)`` once per file; ``run()``
yields ``(line, col0, "MHA001 message", type)`` with a 0-based column.
Asking for ``tree`` means flake8 does not call us on a file with a syntax
error: it reports E999 itself.  This module imports neither torch nor, for
files that cannot concern attention, libcst.
"""

from __future__ import annotations

import weakref
from typing import Iterator, Tuple

from .. import __version__
from ..lint.selection import OFF_BY_DEFAULT
from ..core import collector, runs
from ..core.screen import text_names_a_trigger

__all__ = ["MHAChecker", "MHAOptIn", "OFF_BY_DEFAULT"]


class MHAChecker:
    name = "flake8-mha"
    version = __version__
    project_wide = True  # --mha-no-project-wide turns it off (docs/reach.md)
    # the results cache (cache.py), shared with ``flake8-mha check``: on for a
    # flake8 run (``parse_options``) unless --mha-no-cache; off for a checker
    # made without flake8's options (a test's, an embedding's)
    use_cache = False

    def __init__(self, tree, lines, filename: str = "<unknown>") -> None:
        self.tree = tree
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, option_manager) -> None:
        option_manager.extend_default_ignore(list(OFF_BY_DEFAULT))
        option_manager.add_option(
            "--mha-no-project-wide",
            action="store_true",
            parse_from_config=True,
            help="flake8-mha: do not follow calls into the project's other files",
        )
        option_manager.add_option(
            "--mha-no-cache",
            action="store_true",
            parse_from_config=True,
            help="flake8-mha: neither read nor write the cache of per-file results "
            "(.flake8-mha-cache at the project root, shared with flake8-mha check)",
        )

    @classmethod
    def parse_options(cls, options) -> None:
        cls.project_wide = not getattr(options, "mha_no_project_wide", False)
        cls.use_cache = not getattr(options, "mha_no_cache", False)
        keep_opt_in_codes_off(options)
        # once per flake8 invocation: the project's files hold still until flake8
        # lets its options go (an editor's process starts a new run at each lint)
        weakref.finalize(options, runs.stop, runs.start())

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        try:
            source = "".join(self.lines)
            # a file without an attention word is analysed only where it calls the
            # project's wrappers (docs/reach.md): the gate reads it with ast, no LibCST
            # (words only in comments and docstrings: the engine's code screen, on a
            # cache miss, sends the file to the gate; screen.py)
            gated = not text_names_a_trigger(source)
            # (a file without an import or a ``def`` neither calls the project nor is
            # handed its modules: ``handed_params``)
            if gated and (
                not self.project_wide or ("import" not in source and "def " not in source)
            ):
                return
            from ..app.pipeline import analyze_for_flake8

            # the analyzer an earlier file imported, off the collector's walks (once;
            # not after the first file, so that a one-file run pays nothing)
            collector.settle()
            try:
                # every code runs; flake8's own select/ignore and noqa decide what is shown;
                # no automatic collection while the file's trees are alive (collector.py)
                with collector.paused():
                    findings = analyze_for_flake8(
                        source, self.filename, self.tree, self.project_wide, self.use_cache, gated
                    )
            except Exception as exc:
                from ..lint.engine import SourceSyntaxError  # libcst is imported by now

                if isinstance(exc, SourceSyntaxError):
                    return  # flake8 reports E999
                raise
        except SystemExit as exc:
            if not _in_a_worker():
                raise  # a rule module that does not import: one line, exit 1 (RuleLoadError)
            # in flake8's worker pool (-j 2 and more) an exit kills the worker and
            # flake8 then waits for it forever: the message is each file's MHA000
            yield (1, 0, "MHA000 " + str(exc).removeprefix("flake8-mha: "), type(self))
            return
        except Exception as exc:  # pragma: no cover - last line of defence
            yield (
                1,
                0,
                f"MHA000 flake8-mha could not analyze this file: internal error {exc!r}",
                type(self),
            )
            return
        for f in findings:
            yield (f.line, f.col - 1, f"{f.code} {f.message}", type(self))


def _in_a_worker() -> bool:
    """Whether this is one of flake8's worker processes (``-j`` above 1)."""
    import multiprocessing

    return multiprocessing.parent_process() is not None


def _codes(value) -> list:
    """flake8 gives a code option as a list, or (``--enable-extensions``) as
    the comma-separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    return [str(v).strip() for v in value if str(v).strip()]


def keep_opt_in_codes_off(options) -> None:
    """The opt-in codes stay off unless asked for by ``--select``,
    ``--extend-select`` or ``--enable-extensions`` (their config keys too).

    flake8 forgets its default ignore list (where ``add_options`` put them)
    once a user sets ``ignore =``, as black's ``ignore = E203,W503`` does; so
    each code not asked for is added to ``extend_ignore`` here, before flake8
    builds its decision engine from the options.  A code that is asked for is
    left alone, so that ``--select MHA`` still reports it."""
    if getattr(options, "_mha_opt_in", False):  # MHAOptIn ran first
        return
    asked = tuple(
        _codes(getattr(options, "select", None)) + _codes(getattr(options, "extend_select", None))
    )
    off = [code for code in OFF_BY_DEFAULT if not code.startswith(asked)]
    if off:
        options._mha_user_extend_ignore = getattr(options, "extend_ignore", None)
        options.extend_ignore = [*(_codes(options._mha_user_extend_ignore)), *off]


def let_opt_in_codes_on(options) -> None:
    """``--enable-extensions MHA9`` (flake8 runs MHAOptIn only then; the
    option itself is gone from the final options): undo what
    ``keep_opt_in_codes_off`` added, whichever of the two ran first."""
    options._mha_opt_in = True
    if hasattr(options, "_mha_user_extend_ignore"):
        options.extend_ignore = options._mha_user_extend_ignore
        del options._mha_user_extend_ignore


class MHAOptIn:
    """``--enable-extensions MHA9``: turns the opt-in codes on.

    flake8 runs an ``off_by_default`` plugin only when its entry-point name is
    given to ``--enable-extensions``; when it runs, it lifts the default ignore
    that ``MHAChecker`` placed on the opt-in codes.  The findings themselves
    still come from ``MHAChecker``.
    """

    name = "flake8-mha-opt-in"
    version = __version__
    off_by_default = True

    def __init__(self, tree) -> None:
        pass

    @classmethod
    def parse_options(cls, options) -> None:
        ignore = list(getattr(options, "extended_default_ignore", None) or [])
        options.extended_default_ignore = [c for c in ignore if c not in OFF_BY_DEFAULT]
        let_opt_in_codes_on(options)

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        return iter(())
