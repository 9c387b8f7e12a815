"""Adapter: put the training corpus at its output path (local copy or download, sha256-checked)."""

import logging

from depthlab.corpus import fetch_corpus
from depthlab.logs import to_file

to_file(snakemake.log[0])
# from config, not params: the checksum makes the bytes the same whichever path names them
source = snakemake.config.get("corpus_path") or None
logging.info("corpus from %s", source or snakemake.params.url)
fetch_corpus(snakemake.output[0], source, snakemake.params.url, snakemake.params.sha256)
logging.info("sha256 %s ok", snakemake.params.sha256)
