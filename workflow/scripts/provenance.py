"""Adapter: the config and every Parquet file's provenance, in results/provenance.json."""

import json

from depthlab.core.io import run_summary, write_text
from depthlab.core.logs import end_job, to_file

to_file(snakemake.log[0])
summary = run_summary(list(snakemake.input), snakemake.params.config)
write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n", snakemake.output[0])
end_job()
