"""The planner: which jobs a config asks for (grid), whether it is valid (validate), what each
target reads (catalogue), which cells are measured once (reuse), what a pass costs and how its
seeds are split (cost), cluster resources (resources), code hashes and provenance. Light where
Snakemake parses it."""
