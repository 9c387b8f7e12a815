"""Adapter: measure every claim of the claims file on the fits; write the ledger (Parquet,
Markdown, HTML)."""

from pathlib import Path

import pandas as pd

from depthlab.claims import ledger, to_html, to_markdown
from depthlab.claims_schema import load_claims
from depthlab.io import inherited, provenance, read_meta, write_parquet, write_text
from depthlab.logs import to_file

to_file(snakemake.log[0])
paths = list(snakemake.input.fits)
fits = {Path(p).stem: pd.read_parquet(p) for p in paths}
table = ledger(load_claims(snakemake.input.claims), fits)
write_parquet(table, snakemake.output.parquet, provenance(inherited([read_meta(p) for p in paths])))
write_text(to_markdown(table), snakemake.output.md)
write_text(to_html(table), snakemake.output.html)
