"""Adapter: train one job's cells on the corpus; write its Parquet shard and final weights."""

import hashlib
import json
import logging

import torch

from depthlab.corpus import read_corpus
from depthlab.grid import Cell, Job
from depthlab.io import provenance, write_parquet
from depthlab.logs import to_file
from depthlab.settings import RunSettings
from depthlab.train import save_weights, train_job
from depthlab.training_config import TrainSettings

to_file(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
cells = json.loads(snakemake.params.cells)
job = Job(
    snakemake.wildcards.study,
    snakemake.wildcards.arm,
    snakemake.wildcards.job,
    tuple(Cell(c.pop("label"), RunSettings(**c)) for c in cells),
)
training = TrainSettings.from_mapping(json.loads(snakemake.params.training))
ids, vocab = read_corpus(snakemake.input.corpus)
logging.info("training %d cells of %s/%s/%s", len(cells), job.study, job.arm, job.job)
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
