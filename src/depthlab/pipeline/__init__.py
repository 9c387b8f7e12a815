"""Settings, grid, validation, code hashes, costs, placements and target declarations: light,
imported while Snakemake parses (no torch, pandas or matplotlib)."""
