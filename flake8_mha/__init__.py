"""flake8-mha: a static analyzer (and runtime confirmer) for PyTorch attention code."""

__version__ = "0.1.0"


def __getattr__(name):  # lazy: ``flake8_mha.sanitize`` without importing torch up front
    if name in ("sanitize", "SanitizerError", "SanitizerReport"):
        from . import sanitizer

        return getattr(sanitizer, name)
    raise AttributeError(name)
