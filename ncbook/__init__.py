"""ncbook: neural collapse, derived and reproduced."""

__version__ = "0.1.0"
