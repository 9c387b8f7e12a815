"""The training study: what the notes say about training (stack96's warmup, monitor's final
norm), Post-LN and Pre-LN trained on Tiny Shakespeare and probed at checkpoints (its
targets, fit, tables and figures)."""
