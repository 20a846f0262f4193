"""The package's version: pyproject.toml's (tests/unit/test_layers.py checks that they agree)."""

__version__ = "0.1.0"
