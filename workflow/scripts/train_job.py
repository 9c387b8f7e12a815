"""Adapter: train one job's cells on the corpus; write its Parquet shard and final weights."""

import json
import logging

from depthlab.core.corpus import read_corpus
from depthlab.core.io import write_parquet
from depthlab.core.logs import end_job, to_file
from depthlab.core.runtime import start_compute_job
from depthlab.core.train import save_weights, train_job
from depthlab.core.usage import log_use_at_exit
from depthlab.planner.grid import job_from_json
from depthlab.planner.provenance import job_provenance
from depthlab.vocabulary.train_settings import TrainSettings

to_file(snakemake.log[0])
log_use_at_exit()  # benchmarks/resources.py reads the line
start_compute_job(snakemake.threads)
w = snakemake.wildcards
job = job_from_json(w.study, w.arm, w.job, snakemake.params.cells)
training = TrainSettings.from_mapping(json.loads(snakemake.params.training))
ids, vocab = read_corpus(snakemake.input.corpus)
logging.info("training %d cells of %s/%s/%s", len(job.cells), job.study, job.arm, job.job)
frame, models = train_job(job, training, ids, len(vocab))
meta = job_provenance(job, snakemake.params.cells + snakemake.params.training, snakemake.threads)
write_parquet(frame, snakemake.output.shard, meta)
save_weights(models, [c.settings.seed_list() for c in job.cells], snakemake.output.weights)
logging.info("wrote %d rows", len(frame))
end_job()
