"""The theory096 study (its targets, fit, tables and figures)."""
