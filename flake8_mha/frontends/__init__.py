"""The entry points: the flake8 plugin, the ``flake8-mha`` command (``cli``, ``check``,
``confirm_cli``) and the pytest plugin.  Nothing imports them."""
