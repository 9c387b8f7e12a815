"""Adapter: train one job's cells on the corpus; write its Parquet shard and final weights."""

import hashlib
import json
import logging

from depthlab.corpus import read_corpus
from depthlab.grid import Job
from depthlab.io import provenance, write_parquet
from depthlab.logs import to_file
from depthlab.runtime import start_compute_job
from depthlab.train import save_weights, train_job
from depthlab.training_config import TrainSettings

to_file(snakemake.log[0])
start_compute_job(snakemake.threads)
w = snakemake.wildcards
job = Job.from_json(w.study, w.arm, w.job, snakemake.params.cells)
training = TrainSettings.from_mapping(json.loads(snakemake.params.training))
ids, vocab = read_corpus(snakemake.input.corpus)
logging.info("training %d cells of %s/%s/%s", len(job.cells), job.study, job.arm, job.job)
frame, models = train_job(job, training, ids, len(vocab))
first = job.cells[0].settings
meta = provenance({
    "config_hash": hashlib.sha256(
        (snakemake.params.cells + snakemake.params.training).encode()
    ).hexdigest()[:16],
    "dtype": first.dtype,
    "device": first.device,
    "threads": snakemake.threads,
})
write_parquet(frame, snakemake.output.shard, meta)
save_weights(models, [c.settings.seed_list() for c in job.cells], snakemake.output.weights)
logging.info("wrote %d rows", len(frame))
