"""Adapter: docs/RESULTS.md, the README's summary line and the verdict tables of docs/FIXES.md
and docs/SCALE.md, all from one merged ledger: the confirmatory runs' where they were graded at
the freeze, beside the exploratory runs'."""

import re
from pathlib import Path

import pandas as pd

from depthlab.claims.merge import fingerprint_of, merge_runs
from depthlab.claims.publish import DEFAULT_RUN, headline_line, results_doc, verdict_table
from depthlab.core.io import read_meta, write_text
from depthlab.core.logs import end_job, to_file


def of_commit(path: str) -> str:
    meta = read_meta(path)
    return (f"commit {meta.get('git_commit', '')[:12] or 'none'}, config hash "
            f"{meta.get('config_hash', '')}")


def ledgers(paths: list[str], default: str | None = None) -> dict[str, pd.DataFrame]:
    """{run name: ledger}: the default run's first (results/), then runs/<name>/'s."""
    named = {Path(p).parts[1]: pd.read_parquet(p) for p in paths}
    return {**({DEFAULT_RUN: pd.read_parquet(default)} if default else {}), **named}


def replace_between(path: Path, marker: str, text: str, inline: bool = False) -> None:
    """Rewrite the text between `<!-- marker -->` and `<!-- /marker -->` of a document (on
    their own lines, or `inline` within one)."""
    doc = path.read_text()
    gap = "" if inline else "\n"
    updated, n = re.subn(rf"<!-- {marker} -->.*?<!-- /{marker} -->",
                         lambda _: f"<!-- {marker} -->{gap}{text}{gap}<!-- /{marker} -->", doc,
                         flags=re.S)
    if n != 1:
        raise ValueError(f"{path}: no {marker} markers")
    write_text(updated, path)


to_file(snakemake.log[0])
explored_runs = ledgers(snakemake.input.runs, snakemake.input.ledger)
confirm_runs = ledgers(snakemake.input.confirm)
explored = merge_runs(explored_runs)
confirmed = merge_runs(confirm_runs) if confirm_runs else None
frozen = fingerprint_of({**explored_runs, **confirm_runs}) if confirm_runs else ""
source = ", ".join(f"`{'results' if name == DEFAULT_RUN else 'runs/' + name + '/results'}"
                   f"/claims.parquet` ({of_commit(p)})" for name, p in zip(
                       explored_runs, [snakemake.input.ledger, *snakemake.input.runs],
                       strict=True))
if confirm_runs:
    source = (", ".join(f"`runs/{name}/results/claims.parquet` ({of_commit(p)})" for name, p
                        in zip(confirm_runs, snakemake.input.confirm, strict=True))
              + f" (confirmatory), beside {source} (exploratory)")
rules = Path(snakemake.input.rules).read_text()
readings = pd.read_csv(snakemake.input.readings, keep_default_na=False)
write_text(results_doc(explored, readings, rules, source, confirmed, frozen),
           snakemake.output.results)
headline = explored if confirmed is None else confirmed
docs = Path(snakemake.output.results).parent
beside = None if confirmed is None else explored
replace_between(docs / "FIXES.md", "ledger:fixes",
                verdict_table(headline[headline["note"] == "fixes"], beside))
replace_between(docs / "SCALE.md", "ledger:scale",
                verdict_table(headline[headline["fit"] == "scale"], beside))
# the README's summary line sits between two markers; only that line is rewritten (in place:
# README.md is no declared output, which Snakemake would delete before the job)
replace_between(docs.parent / "README.md", "claims-summary",
                headline_line(explored, confirmed, frozen), inline=True)
end_job()
