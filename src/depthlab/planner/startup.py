"""What one start of snakemake decides before any job runs (the workflow's plan calls it,
depthlab.planner.load): the command line it was started with, whether that command only plans,
the config as given and merged, where each key of it comes from (for a one-line config error
naming the file and line), a named run's folder (or a throwaway one for a command that only
plans), the target errors, the report's refusal and the config warnings. Each error is one
line, then exit, removing the folders this start made.

Plain values in, plain values out: the plan hands over sys.argv, Snakemake's argument parser
(as a callable), the config dicts, paths and the rules' outputs as strings, so that this module
imports nothing of Snakemake and is tested without running it (tests/test_startup.py)."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import dataclasses
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NoReturn

from depthlab.planner.console import report_command
from depthlab.planner.documented import built_elsewhere
from depthlab.planner.overlay import (
    BASE,
    DEFAULTS,
    keeping_nulls,
    load_yaml,
    origin,
    overridden,
    read_config,
    read_config_words,
    typed,
    with_base,
)
from depthlab.planner.validate import (
    check_schema,
    unavailable_target,
    unknown_path,
    unknown_target,
)
from depthlab.vocabulary.settings import ConfigError

# Snakemake's flags of a command that only plans (a dry run, a listing, a graph, a summary,
# the linter): it runs no job, so a named run's folder that does not exist yet is not made
PLANS_ONLY = ("dryrun", "list_rules", "list_target_rules", "lint", "dag", "rulegraph",
              "filegraph", "d3dag", "summary", "detailed_summary", "list_changes")


def command_line(argv: list[str], parser: Callable[[], argparse.ArgumentParser],
                 main: bool = True) -> argparse.Namespace | None:
    """The snakemake command line of `argv` (sys.argv) as Snakemake's own `parser()` reads it
    (snakemake.cli.get_argument_parser, handed in by the Snakefile so that the package never
    imports Snakemake; unknown words ignored), or None: where the workflow is not the `main`
    one (a host workflow's module), where the program is not `snakemake` (a job Snakemake
    spawns, the Python API), or where argparse rejects the words (Snakemake itself says why).
    Snakemake parses the workflow before it acts on the targets or --report, which the checks
    read from here."""
    if not main or not argv or Path(argv[0]).name != "snakemake":
        return None
    try:
        return parser().parse_known_args(argv[1:])[0]
    except SystemExit:
        return None


def plans_only(command: argparse.Namespace | None) -> bool:
    """Whether `command` (command_line's) only plans: one of the PLANS_ONLY flags is given."""
    return command is not None and any(
        getattr(command, flag, None) not in (None, False) for flag in PLANS_ONLY)


def config_sources(cli_config: dict, files: Iterable[str | Path], started_in: str,
                   defaults: dict | None, defaults_file: str | None) -> list[tuple]:
    """Where the config's keys come from, the one that wins first: the --config values
    (`cli_config`, typed), the config `files` in the order they win (the --configfile files,
    the last first, then their `base:` files, nearest first; labelled relative to
    `started_in`), then the `defaults` (config/config.yaml, labelled so, in `defaults_file`
    where it has a path; none with --replace-workflow-config). Each as (label, its config, its
    YAML file or None), as depthlab.planner.overlay.origin reads them."""
    files = [Path(f) for f in files]
    return [
        ("--config", cli_config, None),
        *((os.path.relpath(f, started_in), read_config(f), f) for f in files),
        *([] if defaults is None else [(DEFAULTS, defaults, defaults_file)]),
    ]


def config_error_line(err: Exception, sources: list[tuple]) -> str:
    """One line for a config error `err`: its message, after the file and line (or the source's
    label) of the first of `sources` that gives the key it names, where one does."""
    try:
        where = origin(str(err), sources)
    except ValueError:  # a file that cannot be read again: the message alone
        where = ""
    return f"config error: {where + ': ' if where else ''}{err}"


def leave(message: str, made: Iterable[str]) -> NoReturn:
    """Exit with `message` (one line, before any job), removing the folders of `made` (those
    this start made, outermost first) that are still empty, innermost first."""
    for folder in reversed(list(made)):
        with contextlib.suppress(OSError):  # not empty: kept
            os.rmdir(folder)
    sys.exit(message)


def named_run(config: dict, schema: dict) -> str:
    """The name of the config's named run (`run: {name: ...}`), or '' (no named run). A bad one
    raises ConfigError naming run.name and its value, checked by `schema`'s `run` property
    (the workflow's config schema) before the run's folder is made."""
    named = {key: config[key] for key in ("run",) if key in config}
    check_schema(named, {"type": "object", "properties": {"run": schema["properties"]["run"]}})
    return named.get("run", {}).get("name", "")


def run_folder(started_in: str, name: str, only_plans: bool) -> tuple[str, bool]:
    """Where a named run `name` works, and whether that folder is a throwaway: runs/<name>/ of
    `started_in`, or, for a command that only plans (`only_plans`) while that folder does not
    exist yet, a new empty folder elsewhere, removed at exit, so that the plan is the first
    real run's and nothing is created in runs/ (Snakemake's `workdir:` makes the folder it
    names)."""
    folder = os.path.join(started_in, "runs", name)
    if not only_plans or os.path.isdir(folder):
        return folder, False
    throwaway = tempfile.mkdtemp(prefix=f"depthlab-{name}-")
    atexit.register(shutil.rmtree, throwaway, ignore_errors=True)
    return throwaway, True


def to_be_made(folder: str) -> list[str]:
    """The folders `workdir: folder` makes (the folder and its parent, where they do not exist),
    outermost first: those an early exit removes again (`leave`)."""
    return [f for f in (os.path.dirname(folder), folder) if not os.path.isdir(f)]


def importable_from(folder: str) -> None:
    """Modules in `folder` (where snakemake was started: a config's own block, `block:
    module:function`) importable here after a checkout's src/, and by the jobs (PYTHONPATH,
    also those of a named run, which work in runs/<name>/)."""
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [*filter(None, [os.environ.get("PYTHONPATH")]), folder])
    sys.path.insert(1, folder)


def anchored(config: dict, started_in: str, absolute: bool, keys=("claims", "corpus_path")):
    """The config's relative paths of `keys` (relative to `started_in`, where snakemake was
    started) made relative to the working directory (a named run's folder), or absolute
    (`absolute`: a dry run's throwaway folder, which lies elsewhere); `config` changed in
    place. Nothing changes where the working directory is `started_in`."""
    if os.getcwd() == started_in:
        return
    for key in keys:
        path = config.get(key)
        if isinstance(path, str) and path and not os.path.isabs(path):
            path = os.path.join(started_in, path)
            config[key] = path if absolute else os.path.relpath(path)


def target_error(targets: list[str], rules: list[str], outputs: list[str],
                 made: Callable[[str], bool], unbuildable: list, arms: dict,
                 configs: dict, grid: dict | None = None) -> str:
    """'' when each of `targets` (the command line's) can be built, else one line: a word that
    is no rule name (`rules`) nor a path, with the closest rule name; a declared target this
    config cannot build (one of `unbuildable`, by name or by one of its files), with the
    shipped `configs` that can (for the configured `arms`), or the grid value it lacks
    (`grid`: Catalogue.grid); a path that no rule makes
    (`made(path)`) and that is no file, with the closest of `outputs` (the rules' outputs
    without wildcards)."""
    return (unknown_target(targets, rules)
            or unavailable_target(targets, unbuildable, arms, configs, grid)
            or unknown_path(targets, outputs, made))


@dataclasses.dataclass
class Start:
    """One start of snakemake: what it was given, and what it has decided and made so far.
    `command` is command_line's (None without a command line: a host workflow, a job, the
    Python API); `as_module`, whether a host workflow uses this one as a module (its config is
    the host's, and it chooses its folders); `started_in`, where snakemake was started (the
    config's relative paths are relative to it); `cli_config` and `configfiles`, the
    --config values and --configfile files; `defaults`, config/config.yaml (in
    `defaults_file` where it has a path); `replaced`, --replace-workflow-config (the given
    config is the whole config)."""

    command: argparse.Namespace | None
    as_module: bool
    started_in: str
    cli_config: dict
    configfiles: list[str]
    defaults: dict
    defaults_file: str | None = None
    replaced: bool = False
    bases: list = dataclasses.field(default_factory=list)  # the `base:` files read
    made: list = dataclasses.field(default_factory=list)  # the folders this start made
    throwaway: bool = False  # a named run planned in a throwaway folder (run_folder)

    def __post_init__(self):
        self.replaced = self.replaced and not self.as_module
        # the command line's own words where it has them (a profile's --config values only
        # come through Snakemake's reading)
        words = read_config_words(getattr(self.command, "config", None) or [])
        self.cli_config = {**typed(dict(self.cli_config)), **words}

    def sources(self) -> list[tuple]:
        """config_sources of this start: none in a host workflow (its config is the host's)."""
        if self.as_module:
            return []
        return config_sources(self.cli_config, [*reversed(self.configfiles), *self.bases],
                              self.started_in, None if self.replaced else self.defaults,
                              self.defaults_file)

    def leave(self, message: str) -> NoReturn:
        """Exit with `message`, removing the folders this start made (module `leave`)."""
        leave(message, self.made)

    def config_error(self, err: Exception) -> NoReturn:
        """Exit with one line naming the bad key and value, and where known the file and line
        that gave it: no traceback, before any job runs."""
        try:
            sources = self.sources()
        except ValueError:  # a file that cannot be read again (the error may be about it)
            sources = []
        self.leave(config_error_line(err, sources))

    def merge(self, config: dict, root: str | Callable[[str], str]) -> tuple[dict, dict]:
        """The config as given and as merged. Given: what the command line gives (--configfile
        files, which Snakemake has merged into `config`, then the --config values) or a host
        workflow's `config`. Merged: that, key by key, onto config/config.yaml or onto the
        `base:` file it names (relative to where snakemake runs, else one of the workflow's own
        files: overlay.workflow_file of `root`; a null removing a key); with
        --replace-workflow-config, the given config alone. A bad base is a config error."""
        given = config if self.as_module else keeping_nulls(config, self.cli_config)
        try:
            merged = with_base(given, root, {} if self.replaced else self.defaults,
                               read=self.bases)
        except ValueError as err:
            self.config_error(err)
        return given, merged

    def named_run(self, config: dict, schema: dict) -> str:
        """The config's named run (module `named_run`), a bad one a config error."""
        try:
            return named_run(config, schema)
        except ConfigError as err:
            self.config_error(err)

    def run_folder(self, name: str) -> str | None:
        """The folder a named run `name` works in (module `run_folder`), recording the folders
        it makes and whether it is a throwaway; None where there is no named run or in a host
        workflow (the host chooses its folders)."""
        if not name or self.as_module:
            return None
        folder, self.throwaway = run_folder(self.started_in, name, plans_only(self.command))
        self.made.extend(to_be_made(folder))
        return folder

    def report_command(self, program: str, prefix: str) -> str:
        """The command that reports what this run built (console.report_command), from the
        program, targets, --configfile files and --config words as it was given them."""
        command = self.command
        return report_command(
            program if command else "", list(command.targets or []) if command else [],
            [os.path.relpath(f) for f in self.configfiles],
            list(command.config or []) if command else [], prefix)

    def report_refusal(self, config_text: str, provenance: str) -> str:
        """'' unless the command line asks for --report and `provenance` (results/
        provenance.json) records another config than `config_text` (this run's, as JSON): the
        report's captions are this config's. Then one line saying where they differ."""
        if not (self.command and self.command.report and os.path.exists(provenance)):
            return ""
        recorded = json.loads(Path(provenance).read_text())["config"]
        why = built_elsewhere(json.loads(config_text), recorded, provenance)
        return f"report: {why}; build it with that run's --configfile files" if why else ""

    def target_error(self, rules, outputs, made, unbuildable, arms, configs, grid=None) -> str:
        """The command line's target error (module `target_error`), '' without one."""
        if not self.command:
            return ""
        return target_error(list(self.command.targets or []), rules, outputs, made,
                            unbuildable, arms, configs, grid)

    def warnings(self, given: dict, merged: dict) -> list[str]:
        """A warning line per study setting `given` sets that arms of `merged` override with
        their own (overlay.overridden); none without a command line."""
        if not self.command:
            return []
        return [f"config warning: {line}"
                for line in overridden({k: v for k, v in given.items() if k != BASE}, merged)]


def read_yaml(path: str | Path) -> dict:
    """A YAML file's content (the workflow's schema, config/config.yaml)."""
    return load_yaml(Path(path).read_text())
