"""What a run's fits were measured with, read back from the fits themselves: each row of
results/fits/<study>/<arm>.parquet names its cell (`label`) and how many seeds stand behind it
(`n_seeds`). For `snakemake --report`, which parses the workflow with the config it is given
and never runs a job: it refuses fits measured on other cells or seed counts than that
config's, whether or not results/provenance.json (written only by a full run) exists, so that
its captions (the config's seeds per cell) say what the files were measured with."""

from __future__ import annotations

import os


def measured(fit: str) -> dict[str, int]:
    """{cell label: seeds} of one fit file: the most seeds behind any row of each cell (a
    statistic of a subset of seeds has fewer); {} where the file does not exist."""
    if not os.path.exists(fit):
        return {}
    import pandas as pd  # only for a report: parsing a workflow stays light

    rows = pd.read_parquet(fit, columns=["label", "n_seeds"]).dropna()
    return {label: int(n) for label, n in rows.groupby("label")["n_seeds"].max().items()}


def difference(fit: str, found: dict[str, int], planned: dict[str, int],
               known: set[str]) -> str:
    """'' where the fit `fit` holds the cells `planned` ({label: seeds}, this config's) with
    their seed counts and no cell outside `known` (the labels of every arm of its study: a fit
    may read its study's other arms), or holds nothing (`found` empty: not built); else what
    differs, in a few words naming the file."""
    if not found:
        return ""
    other = sorted((set(planned) - set(found)) | (set(found) - known - set(planned)))
    if other:
        return (f"{fit} holds other cells than this config's ({', '.join(other[:3])}"
                f"{', ...' if len(other) > 3 else ''})")
    seeds = sorted({(found[c], planned[c]) for c in planned if found[c] != planned[c]})
    if seeds:
        were, asked = seeds[0]
        return f"{fit} was measured with {were} seeds per cell (this config: {asked})"
    return ""

def refusal(found: dict[str, dict[str, int]], planned: dict[str, dict[str, int]],
            known: dict[str, set[str]]) -> str:
    """The report's one line where a fit it would show differs from this config's (`found`
    and `planned`: {fit: {cell label: seeds}}, measured and planned; `known`: {fit: the cell
    labels of its study}), else ''."""
    for fit, cells in planned.items():
        why = difference(fit, found.get(fit, {}), cells, known[fit])
        if why:
            return f"report: {why}; build it with that run's --configfile files"
    return ""
