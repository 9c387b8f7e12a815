"""One verdict per sentence across the documented runs (docs/claims_rules.md).

The default run's ledger grades the notes' init-time and training claims; the fixes run grades
the papers' claims and the scale run the asymptotic ones. Every run grades the same claims
file, so each ledger has every entry, "not measured" where the run lacks its study. The merged
ledger takes each entry from the first run (in the order given, the default first) that
measures it and names that run. A sentence graded both at finite depth and at scale
(`asymptote_of` in the claims file) is decided at scale where the scale run graded it: the
finite-depth entry stays as the description at the depths measured, not counted (it and its
restatements restate the at-scale entry). Multiplicity is then recomputed across the merged
ledger.
"""

from __future__ import annotations

import pandas as pd

from depthlab.claims.ledger import multiplicity
from depthlab.claims.outcomes import MEASURED, NOT_MEASURED


def _first_measuring(rows: list[pd.Series]) -> pd.Series:
    return next((r for r in rows if r["outcome"] != NOT_MEASURED), rows[0])


def merge_runs(ledgers: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The ledgers of several runs ({run name: ledger}, the default run first) as one, in the
    first ledger's entry order, with a `run` column naming where each row was graded."""
    if not ledgers:
        raise ValueError("merge_runs needs at least one ledger")
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
    return multiplicity(decide_at_scale(pd.DataFrame(rows).reset_index(drop=True)))


def decide_at_scale(table: pd.DataFrame) -> pd.DataFrame:
    """Each sentence with an at-scale entry that was graded (`asymptote_of`, an interval set
    against the claim): its finite-depth entry and their restatements restate the at-scale
    entry, whose outcome they take; the finite-depth measurement stays in `notes`."""
    table = table.copy()
    by_id = {r["id"]: i for i, r in table.iterrows()}
    for _, scale in table.iterrows():
        finite = scale["asymptote_of"]
        if not finite or scale["restates"] or scale["outcome"] not in MEASURED:
            continue
        for j in [by_id[finite], *table.index[table["restates"] == finite]]:
            row = table.loc[j]
            described = (f"at finite depth ({row['run']} run): {row['shown']}, {row['verdict']}; "
                         f"the sentence is decided at scale by {scale['id']}")
            keep = {k: row[k] for k in ("id", "claim", "kind", "note")}
            table.loc[j] = pd.Series({**scale.to_dict(), **keep, "restates": scale["id"],
                                      "asymptote_of": "", "notes": described})
    return table
