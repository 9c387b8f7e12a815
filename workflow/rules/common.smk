# What every stage's rules read: the Snakefile's PLAN (depthlab.planner.load.Plan: the config,
# the catalogue of jobs and targets, the code hashes and the rules' input functions, all decided
# before this file is read), the path patterns, and what a wildcard may match.
from depthlab.vocabulary import paths


wildcard_constraints:
    study="[A-Za-z0-9]+",
    arm="[A-Za-z0-9_]+(?:@[A-Za-z0-9_]+)?",  # <arm>@<block>: split from a block axis
    job="[^/]+",
