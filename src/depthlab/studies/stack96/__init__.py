"""The stack96 study (its targets, fit, tables and figures)."""
