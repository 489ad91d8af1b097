"""The package version (one place; the package root, the CLI and the exporter's manifest read it)."""

__version__ = "0.1.0"
