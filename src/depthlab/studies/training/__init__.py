"""The training study (its targets, fit, tables and figures)."""
