"""pytest entry point: adds ``--mha-sanitize``; cheap, imports nothing heavy."""

from __future__ import annotations


def pytest_addoption(parser) -> None:
    group = parser.getgroup("flake8-mha")
    group.addoption(
        "--mha-sanitize",
        action="store_true",
        default=False,
        help="run the flake8-mha attention sanitizer around the test session",
    )
    group.addoption(
        "--mha-sanitize-mode",
        choices=("collect", "raise"),
        default="collect",
        help="collect reports and print them at the end (default), or raise at the first",
    )


def pytest_configure(config) -> None:
    if config.getoption("mha_sanitize") and not config.pluginmanager.has_plugin(
        "flake8_mha.sanitizer"
    ):
        from .. import sanitizer

        config.pluginmanager.register(sanitizer, "flake8_mha.sanitizer")
