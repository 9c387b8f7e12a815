"""Adapter: draw one named table or figure from its study's fits."""

import pandas as pd

from depthlab.logs import to_file
from depthlab.render import render

to_file(snakemake.log[0])
fits = pd.read_parquet(snakemake.input[0])
render(snakemake.params.name, fits, dict(snakemake.params.analysis), dict(snakemake.output.items()))
