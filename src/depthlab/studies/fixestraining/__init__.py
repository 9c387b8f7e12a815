"""The fixestraining study (docs/FIXES.md): every placement of the registry trained on Tiny
Shakespeare with and without warmup, probed at checkpoints (its targets, fit, tables and
figures); the init-time comparison is the fixes study. The name has no underscore because study
names are `[A-Za-z0-9]+` (workflow/schemas/config.schema.yaml, the `study` wildcard)."""
