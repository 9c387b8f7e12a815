"""Adapter: fit one study's aggregated table into results/fits/<study>.parquet."""

import pandas as pd

from depthlab.fitting import fit_study
from depthlab.io import inherited, provenance, read_meta, write_parquet
from depthlab.logs import to_file

to_file(snakemake.log[0])
table = pd.read_parquet(snakemake.input[0])
meta = provenance(inherited([read_meta(snakemake.input[0])]))
write_parquet(fit_study(snakemake.wildcards.study, table), snakemake.output[0], meta)
