"""The calm console: Snakemake's per-job records dropped, its progress once per tenth
of the jobs, a job's own progress at most every CONSOLE_EVERY seconds, and the closing summary."""

from __future__ import annotations

import logging

import pandas as pd
import pytest

from depthlab.claims.publish import ledger_news
from depthlab.core import logs
from depthlab.planner.console import (
    CalmConsole,
    calm,
    closing_summary,
    remeasured,
    report_command,
)


def record(msg, event="", level=logging.INFO, **extra):
    r = logging.LogRecord("snakemake.logging", level, __file__, 1, msg, None, None)
    r.event = event
    r.__dict__.update(extra)
    return r


def test_the_filter_drops_per_job_records_and_thins_the_progress():
    calm_one = CalmConsole(lambda: False)
    assert not calm_one.filter(record("rule measure:", "job_info"))
    assert not calm_one.filter(record("", "job_finished"))
    assert not calm_one.filter(record("Select jobs to execute..."))
    assert not calm_one.filter(record("Execute 2 jobs..."))
    assert calm_one.filter(record("Building DAG of jobs..."))
    assert calm_one.filter(record("a job failed", "job_error", logging.ERROR))
    shown = [d for d in range(1, 73) if calm_one.filter(record(None, "progress", done=d,
                                                              total=72))]
    assert shown == [8, 15, 22, 29, 36, 44, 51, 58, 65, 72]  # each tenth, and the last
    assert calm_one.finished == 1


def test_a_dry_run_and_verbose_show_everything():
    for console in (CalmConsole(lambda: True), CalmConsole(lambda: False, quiet=False)):
        assert console.filter(record("rule measure:", "job_info"))
        assert console.filter(record(None, "progress", done=1, total=72))


def test_calm_filters_the_console_handler_not_the_log_file(tmp_path):
    stream, file = logging.StreamHandler(), logging.FileHandler(tmp_path / "x.log")
    console = calm([stream, file], lambda: False)
    assert console in stream.filters and not file.filters
    file.close()


def test_a_job_shows_a_progress_line_at_most_every_console_every_seconds(monkeypatch, caplog):
    clock = iter([0.0, 5.0, 31.0, 40.0, 70.0, 71.0])  # start, then one reading per step
    monkeypatch.setattr(logs.time, "perf_counter", lambda: next(clock))
    shown = []
    monkeypatch.setattr(logs.CONSOLE, "info", lambda line: shown.append(line))
    progress = logs.Progress("s/a/j", [1.0] * 5)
    with caplog.at_level(logging.INFO, logger="depthlab.progress"):
        for i in range(5):
            progress.step(f"cell {i}")
    assert len([r for r in caplog.records if r.name == "depthlab.progress"]) == 5  # the log
    assert [s.split(" (")[0] for s in shown] == ["s/a/j: cell 1", "s/a/j: cell 3",
                                                 "s/a/j: cell 4"]


def test_a_short_job_shows_no_progress_line(monkeypatch):
    clock = iter([0.0, 1.0, 2.0])
    monkeypatch.setattr(logs.time, "perf_counter", lambda: next(clock))
    shown = []
    monkeypatch.setattr(logs.CONSOLE, "info", lambda line: shown.append(line))
    progress = logs.Progress("s/a/j", [1.0, 1.0])
    progress.step("a")
    progress.step("b")
    assert shown == []


def test_the_closing_summary_names_jobs_time_ledger_and_report(tmp_path):
    assert closing_summary(72, 125.4, "Claims: x.", "snakemake --report r.html").splitlines() \
        == ["depthlab: 72 jobs done in 2 min 5 s.", "Claims: x.",
            "The report, every figure and table in one file: snakemake --report r.html"]
    missing = tmp_path / "claims.parquet"
    assert "No claims ledger here yet" in ledger_news(missing, "results/claims.md", 0.0)
    pd.DataFrame({"outcome": ["supported", "contradicted", "supported"],
                  "restates": ["", "", "a"]}).to_parquet(missing)
    assert ledger_news(missing, "m.md", 1e12) == "The claims ledger is unchanged: m.md"
    news = ledger_news(missing, "m.md", 0.0)
    assert news.startswith("Claims: 1 supported, 1 contradicted, 0 inconclusive")
    assert news.endswith("Each claim: m.md")


@pytest.fixture(autouse=True)
def _restore_console_handlers():
    handlers = list(logs.CONSOLE.handlers)
    yield
    logs.CONSOLE.handlers = handlers


def test_the_planned_jobs_are_announced_once_before_the_first_job():
    called = []
    console = CalmConsole(lambda: False, planned=lambda: called.append(len(called)))
    assert console.filter(record("Building DAG of jobs..."))
    assert called == []
    assert console.filter(record("Job stats: ...", "run_info"))
    assert console.filter(record("Job stats: ...", "run_info"))
    assert called == [0]


def test_shards_measured_again_are_one_line_per_reason():
    shards = [("results/runs/s/a/x.parquet", True), ("results/runs/s/a/y.parquet", True),
              ("results/runs/s/b/z.parquet", False)]
    config, code = remeasured(shards)
    assert config.startswith("depthlab: 2 shards measured again (results/runs/s/a/x.parquet and "
                             "1 more): they were made with other settings (another config)")
    assert code == ("depthlab: 1 shard measured again (results/runs/s/b/z.parquet): the code "
                    "their numbers come from changed")
    assert remeasured([]) == [] and len(remeasured(shards[:1])) == 1


def test_the_report_command_is_the_run_s_own(tmp_path, monkeypatch):
    """The program as started (relative under the working directory, its name where found on
    PATH), the targets, --configfile files and --config words as given (quoted for a shell),
    and where a named run's report lands."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".venv/bin").mkdir(parents=True)
    program = str(tmp_path / ".venv/bin/snakemake")
    words = ["studies={stack96: {settings: {seeds: 7}}}"]
    assert report_command(program, ["fig_grad_ratio_by_depth"], ["config/tiny.yaml"], words,
                          "runs/tiny/") == (
        ".venv/bin/snakemake fig_grad_ratio_by_depth --configfile=config/tiny.yaml --config "
        "'studies={stack96: {settings: {seeds: 7}}}' --report results/report.html (writes "
        "runs/tiny/results/report.html)")
    monkeypatch.setenv("PATH", str(tmp_path / ".venv/bin"))
    assert report_command(program, [], ["a.yaml", "b.yaml"], []) == (
        "snakemake --configfile a.yaml b.yaml --report results/report.html (writes "
        "results/report.html)")
