"""Adapter: run one measure job (all its cells and seeds) and write its Parquet shard."""

import logging
import time

import pandas as pd

from depthlab.calibrate import branch_scales
from depthlab.grid import Job
from depthlab.io import config_hash, provenance, write_parquet
from depthlab.logs import to_file
from depthlab.measure import measure_job
from depthlab.runtime import start_compute_job

to_file(snakemake.log[0])
start_compute_job(snakemake.threads)
w = snakemake.wildcards
job = Job.from_json(w.study, w.arm, w.job, snakemake.params.cells)
logging.info("measuring %d cells of %s/%s/%s", len(job.cells), job.study, job.arm, job.job)
# a calibrated arm (workflow/rules/calibrate.smk) reruns its cells with per-layer branch scales
calibration = snakemake.input.get("calibration")
scales = branch_scales(pd.read_parquet(calibration)) if calibration else None
started = time.perf_counter()
frame = measure_job(job, scales)
# benchmarks/ reads this line: the job's compute time against its wall time (start-up share)
logging.info("compute_s=%.3f", time.perf_counter() - started)
first = job.cells[0].settings
meta = provenance({
    "config_hash": config_hash(snakemake.params.cells),
    "dtype": first.dtype,
    "device": first.device,
    "threads": snakemake.threads,
})
write_parquet(frame, snakemake.output[0], meta)
logging.info("wrote %d rows", len(frame))
