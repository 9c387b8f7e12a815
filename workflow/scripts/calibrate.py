"""Adapter: per-layer, per-branch residual scales from an unscaled run's shard."""

import pandas as pd

from depthlab.core.calibrate import calibrate
from depthlab.core.io import inherited, read_meta, write_parquet
from depthlab.core.logs import end_job, to_file
from depthlab.planner.provenance import provenance

to_file(snakemake.log[0])
source = snakemake.input[0]
meta = provenance({**inherited([read_meta(source)]), "source": source})
write_parquet(calibrate(pd.read_parquet(source)), snakemake.output[0], meta)
end_job()
