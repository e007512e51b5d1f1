"""The runtime confirmer: ``flake8-mha confirm PATH...``.

Lints, then runs one witness per finding (a small torch experiment built
only from the finding's evidence, never from the user's code) in a worker
subprocess, and reports whether the damage the rule predicts is real.

Importing this package does not import torch; only the worker does.
"""
