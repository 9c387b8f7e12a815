"""The vocabulary: what a run can say (typed settings, placements, metrics, targets, paths,
training settings, the corpus) and the jobs and pass plans the engine is handed. Light: no
torch, pandas or matplotlib; imported while Snakemake parses."""
