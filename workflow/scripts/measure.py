"""Adapter: run one measure job (all its cells and seeds) and write its Parquet shard."""

import json
import logging

import pandas as pd
import torch

from depthlab.calibrate import branch_scales
from depthlab.grid import Cell, Job
from depthlab.io import config_hash, provenance, write_parquet
from depthlab.logs import to_file
from depthlab.measure import measure_job
from depthlab.settings import RunSettings

to_file(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
cells = json.loads(snakemake.params.cells)
job = Job(
    snakemake.wildcards.study,
    snakemake.wildcards.arm,
    snakemake.wildcards.job,
    tuple(Cell(c.pop("label"), RunSettings(**c)) for c in cells),
)
logging.info("measuring %d cells of %s/%s/%s", len(cells), job.study, job.arm, job.job)
# a calibrated arm (workflow/rules/calibrate.smk) reruns its cells with per-layer branch scales
calibration = snakemake.input.get("calibration")
scales = branch_scales(pd.read_parquet(calibration)) if calibration else None
frame = measure_job(job, scales)
first = job.cells[0].settings
meta = provenance({
    "config_hash": config_hash(snakemake.params.cells),
    "dtype": first.dtype,
    "device": first.device,
    "threads": snakemake.threads,
})
write_parquet(frame, snakemake.output[0], meta)
logging.info("wrote %d rows", len(frame))
