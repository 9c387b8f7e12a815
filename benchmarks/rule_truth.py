"""Each outcome rule of the claims ledger on known truth: simulated seeds where the note is right
and where it is wrong, at the note's seed count, graded by depthlab.claims.ledger; the share
of trials each outcome takes (docs/claims_rules.md, "The rules on known truth"):

    python -m benchmarks.rule_truth [--trials 400]

Each case is one entry of one kind on one fit row of `pool` seeds drawn fresh per trial:
- sample: a note's median of 6 printed to +-0.15 sd, itself a median of 6 fresh seeds (right)
  or that plus four times the median's sd (wrong: a band of one draw tells no less apart),
  against the band drawn from a pool of 36;
- prediction: the mean of 12 seeds against value +- h, the true mean at the value (right) or
  at 2h from it (wrong);
- direction: "above 0" on the mean of 6 seeds, the true mean at +1 sd (right) or -0.2 sd
  (wrong);
- equivalence: "between -m and m" on the mean of 24 seeds, the true mean 0 (right) or 1.5 m
  (wrong);
- invariance: two members "the same, 1 +- h" on 12 seeds, both at 1 (right) or one at 1 + 2h
  (wrong).
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from depthlab.claims.ledger import ledger

NOTES = {"n": {"title": "t", "seeds": 6, "source": "sample"},
         "p": {"title": "t", "source": "prediction"}}


def _row(values: np.ndarray, **keys) -> dict:
    v = np.asarray(values, dtype=float)
    return {"quantity": "x", **keys, "seeds": list(range(len(v))), "seed_values": list(v),
            "n_seeds": len(v), "median": float(np.median(v)), "mean": float(v.mean()),
            "seed0": float(v[0])}


def _entry(note: str, kind: str, documented, statistic: str, rows: dict, tolerance: dict,
           value: str | None = None, **extra) -> dict:
    measure = {"fit": "f", "rows": rows, **({"value": value} if value else {})}
    return {"id": "e", "note": note, "claim": "c", "kind": kind, "documented": documented,
            "statistic": statistic, "measure": measure, "tolerance": tolerance, **extra}


def _graded(entry: dict, rows: list[dict]) -> str:
    table, _ = ledger({"claims": [entry], "notes": NOTES}, {"f": pd.DataFrame(rows)})
    return table["outcome"].iloc[0]


def sample(rng, right: bool) -> str:
    note = np.median(rng.normal(size=6))
    if not right:
        note += 4 * 1.2533 / np.sqrt(6)  # four times the sd of a normal median of 6
    entry = _entry("n", "quantitative", float(note), "median", {"r": {"quantity": "x"}},
                   {"half_unit": 0.15, "reason": "r"})
    return _graded(entry, [_row(rng.normal(size=36))])


def prediction(rng, right: bool) -> str:
    h = 1.0
    entry = _entry("p", "quantitative", 0.0, "mean", {"r": {"quantity": "x"}},
                   {"half_unit": h, "reason": "r"})
    return _graded(entry, [_row(rng.normal(0.0 if right else 2 * h, 1.0, size=12))])


def direction(rng, right: bool) -> str:
    entry = _entry("p", "directional", {"above": 0}, "mean", {"r": {"quantity": "x"}},
                   {"reason": "r"})
    return _graded(entry, [_row(rng.normal(1.0 if right else -0.2, 1.0, size=6))])


def equivalence(rng, right: bool) -> str:
    m = 0.75
    entry = _entry("p", "directional", {"between": [-m, m]}, "mean", {"r": {"quantity": "x"}},
                   {"reason": "r"})
    return _graded(entry, [_row(rng.normal(0.0 if right else 1.5 * m, 1.0, size=24))])


def invariance(rng, right: bool) -> str:
    h = 0.5
    entry = _entry("p", "invariance", {"value": 1}, "mean",
                   {"a": {"quantity": "x", "arm": "a"}, "b": {"quantity": "x", "arm": "b"}},
                   {"half_unit": h, "reason": "r"}, value="stack(a, b)")
    b = 1.0 if right else 1.0 + 2 * h
    return _graded(entry, [_row(rng.normal(1.0, 0.5, size=12), arm="a"),
                           _row(rng.normal(b, 0.5, size=12), arm="b")])


CASES = {"sample (median of 6)": sample, "prediction (mean of 12)": prediction,
         "direction (mean of 6)": direction, "equivalence (mean of 24)": equivalence,
         "invariance (2 members, 12 seeds)": invariance}


def rates(trials: int, seed: int = 0) -> pd.DataFrame:
    """Per case and truth, the share of trials graded supported, contradicted, other."""
    rows = []
    for name, case in CASES.items():
        for right in (True, False):
            rng = np.random.default_rng([seed, len(rows)])
            found = pd.Series([case(rng, right) for _ in range(trials)])
            rows.append({"rule": name, "the note is": "right" if right else "wrong",
                         "supported": float((found == "supported").mean()),
                         "contradicted": float((found == "contradicted").mean()),
                         "other": float((~found.isin(["supported", "contradicted"])).mean()),
                         "trials": trials})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400)
    args = parser.parse_args()
    table = rates(args.trials)
    for column in ("supported", "contradicted", "other"):
        table[column] = [f"{100 * x:.0f}%" for x in table[column]]
    print(table.to_markdown(index=False))


if __name__ == "__main__":
    main()
