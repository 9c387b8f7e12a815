"""A calm console for a run: Snakemake's per-job blocks and scheduler chatter left to its log
file, its progress line once per tenth of the jobs, and one closing summary (what ran, how
long, the claims ledger's counts and where to look). Warnings and errors always show; a dry run
still lists its jobs; Snakemake's --verbose shows everything (the workflow adds no filter)."""

from __future__ import annotations

import logging
import os
import shlex
from collections.abc import Callable

# the kinds of Snakemake log record (their `event` attribute) that describe one job each
PER_JOB = ("job_info", "job_started", "job_finished", "group_info", "shellcmd")
# Snakemake's scheduler lines, one to three per job
SCHEDULER = ("Select jobs to execute", "Execute ", "Removing temporary output")


class CalmConsole(logging.Filter):
    """Counts the jobs that finish (`finished`); unless `quiet` is False, drops Snakemake's
    per-job records and scheduler lines from a console handler, and passes its progress record
    ("k of n steps (x%) done") when a tenth more of the jobs is done. `dry_run()` says whether
    this is a dry run, whose job list is what was asked for; `planned()`, if given, is called
    once as the job stats pass (the jobs are planned, none has run)."""

    def __init__(self, dry_run: Callable[[], bool], quiet: bool = True,
                 planned: Callable[[], None] | None = None):
        super().__init__()
        self.dry_run, self.quiet, self.planned = dry_run, quiet, planned
        self.tenth = self.finished = 0

    def filter(self, record: logging.LogRecord) -> bool:
        event = str(getattr(record, "event", ""))
        self.finished += event == "job_finished"
        if event == "run_info" and self.planned:  # the job stats: the jobs are planned
            planned, self.planned = self.planned, None
            planned()
        if not self.quiet or record.levelno >= logging.WARNING or self.dry_run():
            return True
        if event in PER_JOB or str(record.msg).startswith(SCHEDULER):
            return False
        if event == "progress":
            done, total = getattr(record, "done", 0), getattr(record, "total", 0) or 1
            tenth = 10 * done // total
            if tenth <= self.tenth and done < total:
                return False
            self.tenth = tenth
        return True


def calm(handlers: list[logging.Handler], dry_run: Callable[[], bool],
         quiet: bool = True, planned: Callable[[], None] | None = None) -> CalmConsole:
    """Add one CalmConsole to each console handler (a stream handler, not a log file's) and
    return it (its `finished` count is the closing summary's); `planned` is called once, when
    Snakemake states the jobs it plans (its job stats), before any job runs."""
    console = CalmConsole(dry_run, quiet, planned)
    for handler in handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(
                handler, logging.FileHandler):
            handler.addFilter(console)
    return console


def closing_summary(jobs: int, seconds: float, ledger: str, report: str) -> str:
    """The run's last lines: jobs run and wall time, the ledger's counts (or where it is), and
    the command that builds the report."""
    minutes, secs = divmod(round(seconds), 60)
    took = f"{minutes} min {secs} s" if minutes else f"{secs} s"
    return "\n".join([f"depthlab: {jobs} jobs done in {took}.", ledger,
                      f"The report, every figure and table in one file: {report}"])


def remeasured(shards: list[tuple[str, bool]]) -> list[str]:
    """The console's lines on shards measured again because their params changed since they
    were made, from (shard, whether its cells' settings changed) pairs: one line for those
    made with another config (their cells differ), one for those whose code changed."""
    lines = []
    for by_config, why in ((True, "they were made with other settings (another config): a "
                                  "named run, run: {name: ...}, keeps a config's results apart"),
                           (False, "the code their numbers come from changed")):
        paths = [path for path, changed in shards if changed is by_config]
        if paths:
            more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
            lines.append(f"depthlab: {len(paths)} shard{'s' if len(paths) > 1 else ''} "
                         f"measured again ({paths[0]}{more}): {why}")
    return lines


def report_command(program: str, targets: list[str], configfiles: list[str],
                   config_words: list[str], folder: str = "",
                   report: str = "results/report.html") -> str:
    """The command that reports what a run built, as it was started: `program` (the path it
    was started by, relative where it lies under the working directory, its name alone where
    it was found on PATH), its `targets`, `--configfile` files and `--config` words, each as
    given (shell-quoted), then the report's path, under a named run's `folder`."""
    where = os.path.dirname(os.path.abspath(program)) if program else ""
    on_path = where in os.environ.get("PATH", "").split(os.pathsep)
    name = os.path.relpath(program) if program else "snakemake"
    if on_path or name.startswith(".."):
        name = os.path.basename(program) if on_path else program
    words = [name, *targets]
    if len(configfiles) == 1:
        words.append(f"--configfile={configfiles[0]}")
    elif configfiles:
        words += ["--configfile", *configfiles]
    if config_words:
        words += ["--config", *config_words]
    words += ["--report", report]
    return f"{shlex.join(words)} (writes {folder}{report})"
