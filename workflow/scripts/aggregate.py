"""Adapter: concatenate the shards of one study into results/tables/<study>.parquet."""

import pandas as pd

from depthlab.core.io import inherited, read_meta, write_parquet
from depthlab.core.logs import end_job, to_file
from depthlab.planner.provenance import provenance

to_file(snakemake.log[0])
frame = pd.concat([pd.read_parquet(p) for p in snakemake.input], ignore_index=True)
metas = [read_meta(p) for p in snakemake.input]
meta = provenance({**inherited(metas), "shards": len(metas)})
write_parquet(frame, snakemake.output[0], meta)
end_job()
