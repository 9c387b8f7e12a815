"""The monitor study (its targets, fit, tables and figures)."""
