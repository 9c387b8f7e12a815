"""The pre-registered protocol: explore, freeze, confirm on seeds never seen.

An exploratory run (the documented configs' seeds) grades every entry and identifies which
readings of each note's open settings its numbers allow. `freeze` writes what it chose to
config/frozen.yaml: the allowed and excluded labels of every open setting, the confirmatory
pool (the seed offset no earlier run used) and the fingerprint of the rules, the choices and
the verdicts' code (schema.fingerprint). The freeze is committed, with a changelog entry of the
claims file carrying the same fingerprint, before any confirmatory seed is drawn (the commit
order shows it).

A confirmatory run (config/confirm*.yaml: the same studies from the pool on) is graded at the
frozen readings, never identified anew, and only while the fingerprint is the frozen one and
every graded seed lies in the pool: a rule changed after its numbers were seen needs a new
freeze on a new pool, above every pool an earlier confirmatory run spent (`history`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from depthlab.claims.schema import ClaimsError, fingerprint

EXPLORATORY, CONFIRMATORY = "exploratory", "confirmatory"
STAGES = (EXPLORATORY, CONFIRMATORY)
FROZEN_KEYS = ("date", "pool", "explored", "readings", "history", "fingerprint", "why")


def frozen_rules(frozen: dict | None) -> dict | None:
    """The part of a freeze the fingerprint covers: the readings chosen and the pool."""
    if not frozen:
        return None
    return {"readings": frozen["readings"], "pool": frozen["pool"]}


def rules_fingerprint(claims: dict, frozen: dict | None) -> str:
    """The fingerprint of a claims file's rules with a freeze's choices (or none)."""
    return fingerprint(claims["claims"], claims["notes"], claims["fits"], frozen_rules(frozen))


def check_frozen(frozen, claims: dict) -> dict:
    """A parsed frozen file, checked: its keys, its readings against the notes' open settings,
    its pool above every pool an earlier confirmatory run spent. ClaimsError otherwise."""
    if not isinstance(frozen, dict):
        raise ClaimsError(f"frozen file: {frozen!r} must be a mapping")
    unknown = [k for k in frozen if k not in FROZEN_KEYS]
    missing = [k for k in ("date", "pool", "readings", "fingerprint") if k not in frozen]
    if unknown or missing:
        raise ClaimsError(f"frozen file: unknown key {unknown[0]!r}" if unknown
                          else f"frozen file: missing key {missing[0]!r}")
    if isinstance(frozen["pool"], bool) or not isinstance(frozen["pool"], int):
        raise ClaimsError(f"frozen file: pool={frozen['pool']!r} must be a seed offset")
    spent = [h["pool"] for h in frozen.get("history", []) if h.get("graded")]
    if spent and frozen["pool"] <= max(spent):
        raise ClaimsError(f"frozen file: pool={frozen['pool']} was seen: a confirmatory run "
                          f"already graded seeds from {max(spent)}; a new freeze needs a pool "
                          f"above {max(spent)} (docs/claims_rules.md, 'The protocol')")
    for note, settings in frozen["readings"].items():
        open_settings = {r["setting"]: r for r in claims["notes"].get(note, {})
                         .get("readings", [])}
        for setting, choice in settings.items():
            if setting not in open_settings:
                raise ClaimsError(f"frozen file: readings.{note}.{setting} is not an open "
                                  f"setting of {note}")
            labels = set(open_settings[setting]["labels"])
            allowed, excluded = set(choice.get("allowed", [])), set(choice.get("excluded", {}))
            if allowed & excluded or allowed | excluded != labels:
                raise ClaimsError(f"frozen file: readings.{note}.{setting} must name each of "
                                  f"its labels {sorted(labels)} once, allowed or excluded")
        # a setting may allow none of its labels where its readings were measured only at a
        # cell another setting excludes (varsplit's init at ReLU): the entries are graded at
        # the other settings' allowed readings; a note allowing nothing grades nothing
        if settings and not any(choice.get("allowed") for choice in settings.values()):
            raise ClaimsError(f"frozen file: readings.{note} allows no label of any open "
                              "setting: nothing of the note could be graded")
    return frozen


def load_frozen(path: str | Path, claims: dict) -> dict | None:
    """The checked freeze at `path`, or None where there is none (no file, or only the history
    of earlier freezes)."""
    path = Path(path)
    data = yaml.safe_load(path.read_text()) if path.is_file() else None
    if not data or "fingerprint" not in data:
        return None
    return check_frozen(data, claims)


def excluded_by(frozen: dict) -> dict:
    """{(note, setting, label): why} of the labels a freeze excluded."""
    return {(note, setting, label): f"excluded by the exploratory run ({why})"
            for note, settings in frozen["readings"].items()
            for setting, choice in settings.items()
            for label, why in choice.get("excluded", {}).items()}


def current(frozen: dict | None, claims: dict) -> bool:
    """Whether a freeze holds for these rules: its fingerprint is theirs with its choices."""
    return bool(frozen) and frozen["fingerprint"] == rules_fingerprint(claims, frozen)


def confirmatory_check(frozen: dict | None, claims: dict) -> dict:
    """The freeze a confirmatory run is graded at; ClaimsError (one line) where there is none or
    the rules changed after it."""
    if not frozen:
        raise ClaimsError("protocol.stage=confirmatory needs a freeze (config/frozen.yaml, "
                          "`snakemake freeze` on the exploratory run)")
    now = rules_fingerprint(claims, frozen)
    if now != frozen["fingerprint"]:
        raise ClaimsError(f"protocol.stage=confirmatory: the rules' fingerprint is {now}, the "
                          f"freeze's {frozen['fingerprint']}: a rule changed after the freeze; "
                          "freeze again on a new pool (docs/claims_rules.md, 'The protocol')")
    return frozen


def freeze(records: list[dict], claims: dict, date: str, pool: int, explored: dict,
           history: list[dict], why: str) -> dict:
    """A freeze from the exploratory run's identification `records` (ledger.identify's: note,
    setting, label, excluded, why) for the claims file's open settings; every open setting is
    frozen (one without identifying numbers keeps all its labels)."""
    readings: dict = {}
    for note, spec in claims["notes"].items():
        for reading in spec.get("readings", []):
            rows = [r for r in records if r["note"] == note and r["setting"] == reading["setting"]]
            out = {r["label"]: r["why"] for r in rows if r["excluded"]}
            allowed = [label for label in reading["labels"] if label not in out]
            readings.setdefault(note, {})[reading["setting"]] = (
                {"allowed": allowed, **({"excluded": out} if out else {})})
    frozen = {"date": date, "pool": pool, "explored": explored, "readings": readings,
              "history": history, "why": why}
    frozen["fingerprint"] = rules_fingerprint(claims, frozen)
    return check_frozen(frozen, claims)


@dataclass(frozen=True)
class Stage:
    """How a run's ledger is graded: its stage, the readings excluded (None: identified on the
    run's own numbers), the pool its seeds must come from and the rules' fingerprint."""

    name: str
    excluded: dict | None
    pool: int | None
    fingerprint: str


def graded_at(claims: dict, stage: str, frozen_path: str | Path) -> Stage:
    """The stage a run is graded at. Exploratory: at a freeze that holds for these rules (its
    excluded readings; the run's own identification otherwise). Confirmatory: at the freeze,
    which must hold, on its pool. `frozen_path`: where the freeze would be."""
    if stage not in STAGES:
        raise ClaimsError(f"protocol.stage={stage!r} is not one of {list(STAGES)}")
    frozen = load_frozen(frozen_path, claims)
    if stage == CONFIRMATORY:
        frozen = confirmatory_check(frozen, claims)
        return Stage(stage, excluded_by(frozen), frozen["pool"], frozen["fingerprint"])
    if current(frozen, claims):
        return Stage(stage, excluded_by(frozen), None, frozen["fingerprint"])
    return Stage(stage, None, None, rules_fingerprint(claims, None))


def spent(before: dict, confirmed: set[str]) -> list[dict]:
    """The history a new freeze carries: the earlier freeze's history, and the earlier freeze
    itself where a confirmatory ledger was graded at its fingerprint (`confirmed`: the
    fingerprints of the confirmatory ledgers found), its pool then spent."""
    history = list(before.get("history", []))
    if before.get("fingerprint"):
        history.append({"date": before["date"], "pool": before["pool"],
                        "fingerprint": before["fingerprint"],
                        "graded": before["fingerprint"] in confirmed})
    return history


def next_pool(history: list[dict], step: int = 1000) -> int:
    """The first multiple of `step` above every pool a confirmatory run spent (at least one
    step: the documented configs draw their seeds below it)."""
    used = [h["pool"] for h in history if h.get("graded")]
    return step * (max(used, default=0) // step + 1)
