"""The claims ledger: the schema of config/claims.yaml and the verdict rules."""
