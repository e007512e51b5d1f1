"""``python -m flake8_mha.confirm PATH...``: the same as ``flake8-mha confirm``."""

import sys

from ..frontends.confirm_cli import main

sys.exit(main(sys.argv[1:]))
