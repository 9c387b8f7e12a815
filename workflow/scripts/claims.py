"""Adapter: measure every claim of the claims file on the fits; write the ledger (Parquet,
Markdown, HTML) and the identification of the notes' open settings."""

import json
from collections import defaultdict
from pathlib import Path

from depthlab.claims.ledger import ledger
from depthlab.claims.protocol import graded_at
from depthlab.claims.publish import to_html, to_markdown
from depthlab.claims.schema import load_claims
from depthlab.core.io import inherited, read_meta, write_parquet, write_text
from depthlab.core.logs import end_job, to_file
from depthlab.planner.provenance import provenance
from depthlab.studies.fits import study_fits

to_file(snakemake.log[0])
paths = list(snakemake.input.fits)
by_study = defaultdict(list)
for path in paths:  # results/fits/<study>/<arm>.parquet
    by_study[Path(path).parent.name].append(path)
fits = {study: study_fits(study, group) for study, group in by_study.items()}
claims = load_claims(snakemake.input.claims)
stage = graded_at(claims, snakemake.params.stage, snakemake.params.frozen)
table, readings = ledger(claims, fits, json.loads(snakemake.params.settings), stage.excluded,
                         stage.pool)
table = table.assign(stage=stage.name, fingerprint=stage.fingerprint)
write_parquet(table, snakemake.output.parquet, provenance(inherited([read_meta(p) for p in paths])))
write_text(readings.to_csv(index=False), snakemake.output.readings)
write_text(to_markdown(table, Path(snakemake.output.details).name), snakemake.output.md)
write_text(to_markdown(table), snakemake.output.details)
write_text(to_html(table), snakemake.output.html)
end_job()
