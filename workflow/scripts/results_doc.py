"""Adapter: docs/RESULTS.md and the README's summary line from the ledger of this run."""

import re
from pathlib import Path

import pandas as pd

from depthlab.claims.merge import merge_runs
from depthlab.claims.publish import DEFAULT_RUN, results_doc, summary_line
from depthlab.core.io import read_meta, write_text
from depthlab.core.logs import to_file


def of_commit(path: str) -> str:
    meta = read_meta(path)
    return (f"commit {meta.get('git_commit', '')[:12] or 'none'}, config hash "
            f"{meta.get('config_hash', '')}")


to_file(snakemake.log[0])
# the named documented runs' ledgers (runs/<name>/results/claims.parquet) where they were run
others = {Path(p).parts[1]: p for p in snakemake.input.runs}
table = merge_runs({DEFAULT_RUN: pd.read_parquet(snakemake.input.ledger),
                    **{name: pd.read_parquet(p) for name, p in others.items()}})
source = (f"`results/claims.parquet` ({of_commit(snakemake.input.ledger)}; `snakemake "
          f"--configfile {' '.join(snakemake.params.configs)}`)" + "".join(
              f", merged with `{p}` ({of_commit(p)}), the {name} run" for name, p in
              others.items()))
rules = Path(snakemake.input.rules).read_text()
readings = pd.read_csv(snakemake.input.readings, keep_default_na=False)
confirm = pd.read_parquet(snakemake.input.confirm[0]) if snakemake.input.confirm else None
write_text(results_doc(table, readings, rules, source, confirm), snakemake.output.results)
# the README's summary line sits between two markers; only that line is rewritten (in place:
# README.md is no declared output, which Snakemake would delete before the job)
readme_path = Path(snakemake.output.results).parents[1] / "README.md"
readme = readme_path.read_text()
line = f"<!-- claims-summary -->{summary_line(table)}.<!-- /claims-summary -->"
updated, n = re.subn(r"<!-- claims-summary -->.*?<!-- /claims-summary -->", line, readme,
                     flags=re.S)
if n != 1:
    raise ValueError(f"{readme_path}: no claims-summary markers")
write_text(updated, readme_path)
