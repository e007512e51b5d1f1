"""What a mask means: a small abstract domain and its evaluator (a package
being split out of the former ``masks.py``)."""

from .evaluator import *  # noqa: F401,F403
from .evaluator import _analyses  # noqa: F401  (engine._forget reads it)
