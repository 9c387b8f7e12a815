"""The tiny study end to end: every target exists and its numbers are sane."""

from __future__ import annotations

import re
import subprocess
import sys

import pandas as pd
import pytest
from conftest import CONSOLE, PDFLATEX, compile_latex, tiny_targets

from depthlab.core.io import read_meta
from depthlab.vocabulary import paths
from depthlab.vocabulary.metrics import METRICS


@pytest.mark.workflow
def test_every_target_is_built(tiny_run):
    for target in tiny_targets():
        for path in target.outputs.values():
            assert (tiny_run / path).stat().st_size > 0, path


@pytest.mark.workflow
def test_shards_are_tidy_with_settings_columns(tiny_run):
    table = pd.read_parquet(tiny_run / "results/tables/stack96.parquet")
    for column in ("study", "arm", "label", "seed", "layer", "sublayer", "metric", "value",
                   "placement", "depth", "out_scale", "tokens", "dtype", "device"):
        assert column in table.columns, column
    assert table["value"].notna().all()
    grad = table[(table["metric"] == "grad_norm") & (table["arm"] == "grad")]
    # one gradient per block per seed per cell
    counts = grad.groupby(["placement", "depth", "seed"])["layer"].nunique()
    assert (counts.index.get_level_values("depth") == counts.to_numpy()).all()
    meta = read_meta(tiny_run / "results/tables/stack96.parquet")
    assert meta["torch_version"].startswith("2.13")


@pytest.mark.workflow
def test_grad_ratio_is_first_over_last(tiny_run):
    table = pd.read_parquet(tiny_run / "results/tables/stack96.parquet")
    cell = table[(table["arm"] == "grad") & (table["placement"] == "post") & (table["depth"] == 8)]
    assert cell["seed"].nunique() >= 2
    for seed, sub in cell.groupby("seed"):
        grads = sub[sub["metric"] == "grad_norm"].set_index("layer")["value"]
        ratio = sub.loc[sub["metric"] == "grad_ratio", "value"].iloc[0]
        assert ratio == pytest.approx(grads.loc[1] / grads.loc[8], rel=1e-12), seed


@pytest.mark.workflow
def test_stream_growth_table_matches_fits(tiny_run):
    growth = pd.read_csv(tiny_run / "results/tables/stream_growth.csv")
    assert list(growth["L"]) == [2, 8]
    ratio = growth["last sd"] / growth["layer 1 sd"]
    # the factor is the median of per-seed ratios: close to the ratio of medians
    assert ratio.to_numpy() == pytest.approx(growth["factor"].to_numpy(), rel=0.1)
    # Pre-LN stream only grows
    assert (growth["factor"] > 1).all()


@pytest.mark.workflow
def test_the_tiny_run_s_console_is_calm_and_ends_with_the_summary(tiny_run):
    """The tiny run's console: at most 150 lines; Snakemake's progress once per tenth
    of the jobs, no per-job block, no library warning (it goes to the job's log,
    depthlab.core.logs.to_file); at the end the jobs run, the ledger's counts and the report
    command (depthlab.planner.console)."""
    console = (tiny_run / CONSOLE).read_text()
    lines = console.splitlines()
    assert len(lines) <= 150, len(lines)
    steps = re.findall(r"^(\d+) of (\d+) steps \(\d+%\) done$", console, re.M)
    assert 5 <= len(steps) <= 11 and steps[-1][0] == steps[-1][1]
    assert not re.search(r"^(localrule|rule) \w+:$|^Finished jobid|^Select jobs", console, re.M)
    warned = re.findall(r"^.*\b\w*Warning\b.*$", console, re.M)
    assert not warned, warned[:3]
    summary = console[console.index("depthlab: "):]
    assert re.match(rf"depthlab: {steps[-1][0]} jobs done in \d+", summary)
    assert re.search(r"^Claims: \d+ supported, .*Each claim: runs/tiny/results/claims.md$",
                     summary, re.M)
    assert ("snakemake --configfile=config/tiny.yaml --report results/report.html (writes "
            "runs/tiny/results/report.html)") in summary


def test_a_jobs_warnings_go_to_its_log(tmp_path):
    log = tmp_path / "job.log"
    code = ("import warnings\nfrom depthlab.core.logs import to_file\n"
            f"to_file({str(log)!r})\nwarnings.warn('lexsort depth', UserWarning)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert "lexsort" not in done.stderr
    assert "UserWarning: lexsort depth" in log.read_text()


JOB = """import atexit, logging
from depthlab.core.logs import end_job, to_file
class Module:
    def __del__(self):
        print("torn down")
kept = Module()  # as a module's global: collected in the interpreter's teardown
to_file({log!r})
atexit.register(logging.info, "exit handler")
print("the job's console line", end="")
logging.info("the job's last line")
{then}
end_job()
print("after end_job")
"""


@pytest.mark.parametrize("then, status", [("", 0), ("raise ValueError('bad cell')", 1)])
def test_a_finished_job_ends_at_once_and_a_failed_one_as_python_ends_it(tmp_path, then, status):
    """depthlab.core.logs.end_job: the exit handlers run after the job's last line, the console
    is flushed, nothing after it runs and the interpreter's teardown is skipped (status 0); a
    job that fails before it ends with its error in the log, torn down, status 1."""
    log = tmp_path / "job.log"
    done = subprocess.run([sys.executable, "-c", JOB.format(log=str(log), then=then)],
                          capture_output=True, text=True)
    assert done.returncode == status, done.stderr
    lines = [line.split(": ", 1)[1] for line in log.read_text().splitlines()]
    assert lines[lines.index("the job's last line") + 1:] == (
        ["exit handler"] if status == 0 else ["ValueError: bad cell", "exit handler"])
    assert done.stdout == ("the job's console line" if status == 0
                           else "the job's console linetorn down\n")


@pytest.mark.workflow
def test_every_compute_job_logs_what_it_used(tiny_run):
    """Each measure and train job ends its log with its CPU seconds and its peak memory
    (depthlab.core.usage.log_use), which benchmarks/resources.py reads: at most the job's wall
    time on its one thread, and a peak of at least what Snakemake's benchmark file sampled."""
    benches = sorted((tiny_run / "results/benchmarks").rglob("*.tsv"))
    assert len(benches) >= 6
    for bench in benches:
        rule, study, arm = bench.parent.parent.parent.name, bench.parent.parent.name, \
            bench.parent.name
        log = tiny_run / paths.job_log(rule).format(study=study, arm=arm, job=bench.stem)
        used = re.search(r"used cpu_s=([0-9.]+) peak_mb=([0-9.]+)$", log.read_text(), re.M)
        assert used, log
        sampled = pd.read_csv(bench, sep="\t").iloc[0]
        cpu_s, peak_mb = float(used[1]), float(used[2])
        assert 0 < cpu_s <= sampled["s"] * 1.05 + 0.1, (log, cpu_s, sampled["s"])
        # the benchmark's max_rss sums the job's process tree: the script's Python process
        # (its VmHWM, logged) and the shell that starts it (a few MB; 3.4 MB seen)
        assert peak_mb >= sampled["max_rss"] - 8, (log, peak_mb, sampled["max_rss"])


@pytest.mark.workflow
@pytest.mark.parametrize("target", [t for t in tiny_targets() if t.kind == "table"],
                         ids=lambda t: t.name)
def test_every_table_has_a_latex_table_beside_it(tiny_run, target, tmp_path):
    """Each rendered table also as LaTeX: plain ASCII naming the packages it needs, a booktabs
    tabular with the CSV's header and one row per CSV row, no unescaped underscore outside
    maths; where pdflatex is installed it compiles with those packages and fits the text
    width (no overfull box)."""
    csv = pd.read_csv(tiny_run / target.outputs["csv"])
    tex = (tiny_run / target.outputs["tex"]).read_text()
    body = tex[tex.index("\\midrule") + len("\\midrule"):tex.index("\\bottomrule")]
    assert tex.startswith("% needs \\usepackage{booktabs}") and tex.isascii()
    assert "\\begin{table}" in tex and "\\begin{tabular}{l" in tex
    assert len(body.strip().splitlines()) == len(csv) > 0
    text = re.sub(r"(?<!\\)\$.*?(?<!\\)\$", "", tex)  # outside $...$
    assert re.search(r"(?<!\\)_", text.replace("\\_", "")) is None
    if PDFLATEX:
        assert "Overfull \\hbox" not in compile_latex(tex, tmp_path)


@pytest.mark.workflow
def test_the_metrics_registry_is_what_the_shards_hold(tiny_run, tiny_fixes_run):
    """The engine declares (`@probe`, `@measures`; vocabulary.metrics is their copy) exactly
    the metrics the tiny runs' shards hold: none undeclared (a probe of one is an error), none
    declared that no probe writes; each where its declaration says (its sublayers)."""
    shards = [p for run in (tiny_run, tiny_fixes_run)
              for p in sorted((run / "results/runs").rglob("*.parquet"))]
    assert shards
    rows = pd.concat([pd.read_parquet(p, columns=["metric", "sublayer"]) for p in shards])
    assert set(rows["metric"]) == set(METRICS)
    for name, sub in rows.drop_duplicates().itertuples(index=False):
        declared = METRICS[name].sublayers
        assert sub in declared.split(", ") or (declared.startswith("f1") and sub[0] == "f"), \
            (name, sub)

