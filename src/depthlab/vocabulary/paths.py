"""Where the workflow writes each kind of file: one Snakemake path pattern each, relative to the
working directory (the rules' outputs and the catalogue's inputs both come from here)."""

# one measure or train job's rows (depthlab.planner.grid.Job)
SHARD = "results/runs/{study}/{arm}/{job}.parquet"
# a calibrated arm's residual scales, from its source arm's shard
CALIBRATION = "results/calibration/{study}/{arm}/{job}.parquet"
# a train job's final weights (temp: deleted unless asked for by path)
WEIGHTS = "results/weights/{study}/{arm}/{job}.pt"
# one arm's fit
FIT = "results/fits/{study}/{arm}.parquet"
# every shard of a study in one table
TABLE = "results/tables/{study}.parquet"
# the config and every Parquet file's provenance
PROVENANCE = "results/provenance.json"
# the claims ledger: its outputs by kind
LEDGER = {
    "parquet": "results/claims.parquet",
    "md": "results/claims.md",
    "details": "results/claims_details.md",
    "html": "results/claims.html",
    "readings": "results/claims_readings.csv",
}


def benchmark(rule: str) -> str:
    """What one job of `rule` (measure or train) used: Snakemake's benchmark file, a pattern
    over study, arm and job."""
    return f"results/benchmarks/{rule}/{{study}}/{{arm}}/{{job}}.tsv"


def job_log(rule: str) -> str:
    """The log of one job of `rule` (measure, train), a pattern over study, arm and job; a
    compute job's last line says the CPU seconds and peak memory it used
    (depthlab.core.usage.log_use)."""
    return f"logs/{rule}/{{study}}/{{arm}}/{{job}}.log"
