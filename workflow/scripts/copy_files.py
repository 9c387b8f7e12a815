"""Adapter: copy each input file to the output at the same position (atomically)."""

import shutil

from depthlab.core.io import atomic_path
from depthlab.core.logs import end_job, to_file

to_file(snakemake.log[0])
for source, dest in zip(snakemake.input, snakemake.output, strict=True):
    with atomic_path(dest) as tmp:
        shutil.copyfile(source, tmp)
end_job()
