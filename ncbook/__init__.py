"""ncbook: neural collapse, derived and reproduced."""
