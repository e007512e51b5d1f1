"""flake8-mha: a static analyzer (and runtime confirmer) for PyTorch attention code."""

__version__ = "0.1.0"
