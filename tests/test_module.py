"""depthlab used as a Snakemake module of another workflow (docs/MODULE.md): a host with its own
config keys, its own default target and `prefix: "depthlab"`, which passes depthlab its config
under a key of its own (config/tiny.yaml, an overlay merged onto depthlab's defaults), runs the
tiny study's ledger from its own folder and gets the numbers of a plain run; a host that loads
the workflow by URL measures one figure's cells."""

from __future__ import annotations

import re
import shutil

import pandas as pd
import pytest
import yaml
from conftest import ROOT, copy_workflow, run_snakemake

pytestmark = pytest.mark.workflow

HOST = """\
configfile: "host_config.yaml"


rule all:
    input:
        "samples.txt",


rule samples:
    output:
        "samples.txt",
    shell:
        "echo {{config[my_samples]}} > {{output}}"


module depthlab:
    snakefile:
        "{snakefile}"
    config:
        config["depthlab"]
    prefix:
        "depthlab"


use rule * from depthlab as depthlab_*
"""


# what a plain run measured (and calibrated, and trained) and fitted: the host takes these as
# they are, so that its own claims rule grades the same numbers without measuring or fitting
# again; the URL test below measures and fits through a host
MEASURED = ("results/runs", "results/calibration", "results/weights", "results/fits")


def test_tiny_ledger_through_a_host_workflow(tmp_path, tiny_run):
    """The module path: the host's config key reaches depthlab merged onto its defaults, the
    host's default target stays its own, the results go under the prefix, and from the plain
    run's measurements and fits the host's ledger (its claims rule, reading the config the
    host passed) equals the plain run's, with no graded row for a tiny config
    (docs/claims_rules.md, the domain)."""
    (tmp_path / "depthlab").mkdir()
    module = copy_workflow(tmp_path / "depthlab")  # the module lives in its own folder
    host = tmp_path / "host"
    host.mkdir()
    (host / "Snakefile").write_text(HOST.format(snakefile=module / "workflow" / "Snakefile"))
    config = yaml.safe_load((ROOT / "config/tiny.yaml").read_text())
    host_config = {"my_samples": ["a", "b"], "depthlab": config}
    (host / "host_config.yaml").write_text(yaml.safe_dump(host_config, sort_keys=False))
    listed = run_snakemake(host, "--list-target-rules").stdout
    assert "depthlab_fig_grad_ratio_by_depth" in listed and "first/last gradient" in listed
    assert "depthlab_all" in listed
    # the docs_* rules would rewrite the module's own README.md and docs/: not in a host
    assert not re.search(r"^\S*docs_", listed, re.M), listed
    # plain `snakemake` builds the host's own default target, not depthlab's
    planned = run_snakemake(host, "-n").stdout
    assert re.search(r"^all\s+1$", planned, re.M) and "depthlab_" not in planned, planned
    for stage in MEASURED:
        if (tiny_run / stage).exists():
            shutil.copytree(tiny_run / stage, host / "depthlab" / stage)
    planned = run_snakemake(host, "-n", "depthlab_claims").stdout
    stats = planned[planned.index("Job stats:"):]  # rule, count: what the host would run
    assert re.search(r"^depthlab_claims\s+1$", stats, re.M), stats
    assert not re.search(r"^depthlab_(measure|train|calibrate|fit)\w*\s+\d+$", stats,
                         re.M), stats
    run_snakemake(host, "--cores", "2", "depthlab_claims")
    # the host's folder holds the results, under the prefix; the module's own folder is left alone
    assert not (module / "results").exists() and not (host / "results").exists()
    ledger = "results/claims.parquet"
    hosted = pd.read_parquet(host / "depthlab" / ledger)
    pd.testing.assert_frame_equal(hosted, pd.read_parquet(tiny_run / ledger), check_exact=True)
    # a user's tiny config, through the module path too, gets no graded row
    assert len(hosted) > 0
    assert not hosted["outcome"].isin(["supported", "contradicted", "inconclusive"]).any()


@pytest.fixture
def served(tmp_path):
    """A copy of the workflow served over HTTP from a local server (as github(...) would serve
    it), with no src/ beside it: the module's code is the installed depthlab package."""
    import functools
    import http.server
    import threading

    (tmp_path / "served").mkdir()
    module = copy_workflow(tmp_path / "served")
    shutil.rmtree(module / "src")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(module))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_host_loads_the_workflow_by_url(tmp_path, served, tiny_run):
    """The catalog's way to deploy: a host module whose snakefile is a URL builds the
    tiny study's fig_grad_ratio_by_depth from `base: config/tiny.yaml`, reading the module's
    files through workflow.source_path; its fits equal a plain run's."""
    host = tmp_path / "host"
    host.mkdir()
    (host / "Snakefile").write_text(HOST.format(snakefile=f"{served}/workflow/Snakefile"))
    # the shipped tiny config by name: fetched through the source cache, as the module's own
    config = {"my_samples": ["a"], "depthlab": {"base": "config/tiny.yaml"}}
    (host / "host_config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    run_snakemake(host, "--cores", "2", "depthlab_fig_grad_ratio_by_depth")
    figure = host / "depthlab/results/figures/grad_ratio_by_depth.png"
    assert figure.stat().st_size > 0
    fit = "results/fits/stack96/grad.parquet"
    pd.testing.assert_frame_equal(pd.read_parquet(host / "depthlab" / fit),
                                  pd.read_parquet(tiny_run / fit), check_exact=True)
