"""Adapter: run one measure job (all its cells and seeds) and write its Parquet shard."""

import json
import logging
import time

import pandas as pd

from depthlab.core.calibrate import branch_scales
from depthlab.core.io import write_parquet
from depthlab.core.logs import Progress, end_job, to_file
from depthlab.core.records import copied_rows, job_rows
from depthlab.core.usage import log_use_at_exit
from depthlab.planner import cost
from depthlab.planner.grid import job_from_json
from depthlab.planner.provenance import job_provenance
from depthlab.planner.reuse import Source, owner_shards

to_file(snakemake.log[0])
log_use_at_exit()  # benchmarks/resources.py reads the line
w = snakemake.wildcards
job = job_from_json(w.study, w.arm, w.job, snakemake.params.cells)
logging.info("measuring %d cells of %s/%s/%s", len(job.cells), job.study, job.arm, job.job)
# cells another job measures with the same numbers (depthlab.planner.reuse) are copied from its
# shard, not measured again; a job of copies only does without torch (its import: 2 s)
reused = json.loads(snakemake.params.get("reused", "{}"))
measures = any(c.label not in reused for c in job.cells)
if measures:
    from depthlab.core.measure import measure_job
    from depthlab.core.runtime import start_compute_job

    start_compute_job(snakemake.threads)

# a calibrated arm (workflow/rules/calibrate.smk) reruns its cells with per-layer branch scales
calibration = snakemake.input.get("calibration")
scales = branch_scales(pd.read_parquet(calibration)) if calibration else None
# the owners' shards by source key (results/runs/...), paired with the inputs by position: a
# host workflow's module prefix changes the input paths (docs/MODULE.md)
sources = {label: Source(*source) for label, source in reused.items()}
paths = snakemake.input.get("owners", [])
shards = dict(zip(owner_shards(sources.values()), map(pd.read_parquet, paths), strict=True))
copies = {c.label: copied_rows(shards[sources[c.label].shard], sources[c.label].label, c)
          for c in job.cells if c.label in sources}
started = time.perf_counter()
# one progress line per cell on the console, the time left estimated by the cells' FLOPs
weights = [0.0 if c.label in copies else cost.cell_flops(c.settings) for c in job.cells]
progress = Progress(f"{job.study}/{job.arm}/{job.job}", weights)
if measures:
    frame = measure_job(job, scales, progress.step, copies)
else:
    frame = job_rows(job, lambda cell: copies[cell.label], progress.step)
# benchmarks/ reads this line: the job's compute time against its wall time (start-up share)
logging.info("compute_s=%.3f", time.perf_counter() - started)
meta = job_provenance(job, snakemake.params.cells, snakemake.threads)
write_parquet(frame, snakemake.output[0], meta)
logging.info("wrote %d rows", len(frame))
end_job()
