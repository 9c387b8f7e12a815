"""One verdict per sentence across the documented runs (docs/claims_rules.md).

The default run's ledger grades the notes' init-time and training claims; the fixes run grades
the papers' claims and the scale run the depths to 1024. Every run grades the same claims file
at the same rules, so each ledger has every entry, "not measured" where the run lacks its
study, and the same fingerprint: ledgers graded under other rules are refused. The merged
ledger takes each entry from the first run (in the order given, the default first) that
measures it and names that run; the evidence (p, q and the gate) is then computed anew across
the merged ledger (depthlab.claims.evidence).
"""

from __future__ import annotations

import pandas as pd

from depthlab.claims.evidence import gate
from depthlab.claims.ledger import premised
from depthlab.claims.outcomes import NOT_MEASURED


def _first_measuring(rows: list[pd.Series]) -> pd.Series:
    return next((r for r in rows if r["outcome"] != NOT_MEASURED), rows[0])


def fingerprint_of(ledgers: dict[str, pd.DataFrame]) -> str:
    """The one fingerprint of the rules the ledgers were graded at; ValueError naming the runs
    where they differ."""
    found = {name: set(table["fingerprint"]) for name, table in ledgers.items()}
    every = set().union(*found.values())
    if len(every) != 1:
        shown = ", ".join(f"{name}: {'/'.join(sorted(f))}" for name, f in found.items())
        raise ValueError(f"the ledgers were graded under different rules ({shown}): regrade "
                         "them at one commit (snakemake claims in each run)")
    return every.pop()


def merge_runs(ledgers: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The ledgers of several runs ({run name: ledger}, the default run first) as one, in the
    first ledger's entry order, with a `run` column naming where each row was graded."""
    if not ledgers:
        raise ValueError("merge_runs needs at least one ledger")
    fingerprint_of(ledgers)
    names = list(ledgers)
    by_run = {name: ledgers[name].set_index("id", drop=False) for name in names}
    ids = list(ledgers[names[0]]["id"])
    for name in names[1:]:
        if list(ledgers[name]["id"]) != ids:
            raise ValueError(f"the {name} run's ledger has other entries than the {names[0]} "
                             "run's: grade both with the same claims file")
    rows = []
    for entry in ids:
        tagged = [by_run[name].loc[entry].copy() for name in names]
        for name, row in zip(names, tagged, strict=True):
            row["run"] = name
        rows.append(_first_measuring(tagged))
    return premised(gate(pd.DataFrame(rows).reset_index(drop=True)))
