"""``python -m flake8_mha``: the ``flake8-mha`` command (``check``,
``confirm``, ``explain``), for an environment whose scripts are not on PATH."""

from .frontends.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
