"""The varsplit study (its targets, fit, tables and figures)."""
