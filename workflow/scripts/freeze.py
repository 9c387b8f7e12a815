"""Adapter: freeze the protocol's choices (config/frozen.yaml) from the exploratory run's
identification of the notes' open settings (depthlab.claims.protocol)."""

import datetime
from pathlib import Path

import pandas as pd
import yaml

from depthlab.claims.protocol import freeze, next_pool, spent
from depthlab.claims.schema import load_claims
from depthlab.core.io import read_meta, write_text
from depthlab.core.logs import end_job, to_file

to_file(snakemake.log[0])
claims = load_claims(snakemake.input.claims)
records = pd.read_csv(snakemake.input.readings, keep_default_na=False).to_dict("records")
for record in records:  # read back from the CSV
    record["excluded"] = str(record["excluded"]) == "True"
path = Path(snakemake.output.frozen)
before = yaml.safe_load(snakemake.params.before) or {}  # read before the job removed it
confirmed = {str(f) for p in snakemake.input.confirm
             for f in pd.read_parquet(p, columns=["fingerprint"])["fingerprint"]}
history = spent(before, confirmed)
explored = {Path(p).parts[1] if p.startswith("runs/") else "default":
            {k: read_meta(p).get(k, "") for k in ("git_commit", "config_hash")}
            for p in [snakemake.input.ledger, *snakemake.input.runs]}
frozen = freeze(records, claims, datetime.date.today().isoformat(), next_pool(history),
                explored, history, snakemake.params.why)
write_text("# The protocol's freeze (docs/claims_rules.md, \"The protocol\"): written by "
           "`snakemake --cores all freeze`\n# from the exploratory run; commit it, with a "
           "changelog entry of config/claims.yaml carrying\n# its fingerprint, before the "
           "confirmatory runs (config/confirm*.yaml) draw a seed.\n"
           + yaml.safe_dump(frozen, sort_keys=False, allow_unicode=True, width=100), path)
end_job()
