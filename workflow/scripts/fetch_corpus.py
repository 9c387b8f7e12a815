"""Adapter: put the training corpus at its output path (the shipped copy, a local file or a URL),
sha256-checked."""

import logging

from depthlab.core.corpus import fetch_corpus
from depthlab.core.logs import end_job, to_file

to_file(snakemake.log[0])
# from config, not params: the checksum makes the bytes the same whichever path names them
config = snakemake.config
source = config.get("corpus_url") or config.get("corpus_path") or snakemake.input[0]
logging.info("corpus from %s", source)
fetch_corpus(snakemake.output[0], source, snakemake.params.sha256)
logging.info("sha256 %s ok", snakemake.params.sha256)
end_job()
