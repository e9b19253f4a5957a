"""The project's version (pyproject.toml's), in a module of its own so that any part of `uds` can read
it without importing the package's front door."""

__version__ = "0.1.0"
