"""MHA000: the analyzer could not analyze a file (reported by the engine, not by a rule pass)."""

from __future__ import annotations

from .base import Rule


class AnalyzerError(Rule):
    CODE = "MHA000"
    NAME = "analyzer-error"
    CATEGORY = "internal"
    MESSAGE = "flake8-mha could not analyze this file: {reason}"
    WHAT = """
        Reported once, at the top of a file that the analyzer could not read or
        analyze (undecodable bytes, a file LibCST cannot parse, nesting too deep,
        a file too large, or an internal error). flake8 goes on with the other
        files; a Python syntax error is left to flake8's own E999. A file
        Python compiles but LibCST refuses because its indentation mixes tabs
        and spaces is said so, with the first such line (LibCST's own error
        points at line 1).
        """
    WHY = """
        A linter that silently skips a file gives false confidence; one that
        crashes stops the whole run. MHA000 is neither: it says what happened.
        """
    EXAMPLE = """
        # a file saved as latin-1 without a coding cookie
        """
    USE_INSTEAD = """
        # -*- coding: latin-1 -*-
        """
    VALID = ["x = 1\n"]
    INVALID = []
