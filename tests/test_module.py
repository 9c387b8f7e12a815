"""depthlab used as a Snakemake module of another workflow (README.md, "Use depthlab in your own
workflow"): a host that includes it with `use rule * from depthlab as depthlab_*` runs the tiny
study from its own folder, with its own config, and gets the numbers of a plain run."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from conftest import ROOT, copy_workflow, run_snakemake

pytestmark = pytest.mark.workflow

HOST = """\
configfile: "host_config.yaml"


module depthlab:
    snakefile:
        "{snakefile}"
    config:
        config


use rule * from depthlab as depthlab_*
"""


def test_tiny_study_through_a_host_workflow(tmp_path, tiny_run):
    (tmp_path / "depthlab").mkdir()
    module = copy_workflow(tmp_path / "depthlab")  # the module lives in its own folder
    host = tmp_path / "host"
    host.mkdir()
    (host / "Snakefile").write_text(HOST.format(snakefile=module / "workflow" / "Snakefile"))
    config = yaml.safe_load((ROOT / "config/tiny.yaml").read_text())
    (host / "host_config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    listed = run_snakemake(host, "--list-target-rules").stdout
    assert "depthlab_fig_grad_ratio_by_depth" in listed and "first/last gradient" in listed
    run_snakemake(host, "--cores", "2", "depthlab_all")
    # the host's folder holds the results; the module's own folder is left alone
    assert not (module / "results").exists()
    for study in config["studies"]:
        table = f"results/tables/{study}.parquet"
        pd.testing.assert_frame_equal(pd.read_parquet(host / table),
                                      pd.read_parquet(tiny_run / table), check_exact=True)
    ledger = "results/claims.parquet"
    pd.testing.assert_frame_equal(pd.read_parquet(host / ledger),
                                  pd.read_parquet(tiny_run / ledger), check_exact=True)
