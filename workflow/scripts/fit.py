"""Adapter: fit one arm's shards into results/fits/<study>/<arm>.parquet with its study's fit."""

import importlib
import json

import pandas as pd

from depthlab.core.io import inherited, read_meta, write_parquet
from depthlab.core.logs import end_job, to_file
from depthlab.planner.provenance import provenance

to_file(snakemake.log[0])
study = snakemake.wildcards.study
fit = importlib.import_module(f"depthlab.studies.{study}.fit").fit
table = pd.concat([pd.read_parquet(p) for p in snakemake.input], ignore_index=True)
meta = provenance(inherited([read_meta(p) for p in snakemake.input]))
write_parquet(fit(table, json.loads(snakemake.params.axes)), snakemake.output[0], meta)
end_job()
