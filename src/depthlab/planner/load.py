"""What the workflow decides while Snakemake parses it (workflow/Snakefile), in one place: the
config as given, merged and checked, a named run's folder, the jobs and what each copies, the
code hashes, the rules' input functions, the one-line refusals before any job, and the run's
closing lines. The one module that reads Snakemake's own objects (the `workflow` the Snakefile
hands over: its config settings, modifier, rules, DAG, output settings), so that the Snakefile
and workflow/rules/*.smk stay thin; it never imports Snakemake (its argument parser, `validate`
and `workflow.source_path` are handed in as callables), and is tested with plain stand-ins
(tests/test_load.py).

A start of snakemake goes through a Plan in three steps, around the Snakefile's `workdir:` and
`include:`s:

1. `Plan(...)`: the start (depthlab.planner.startup): its command line (None in a host workflow,
   a job, the Python API), where snakemake was started (a cluster job's snakemake inherits it),
   the config as given (--configfile, then --config values read as YAML) merged onto
   config/config.yaml or its `base:`, a named run's name and folder, the calm console. A config
   error is one line naming the file and line, before any job.
2. `plan.plan()`, in the run's folder (after `workdir:`): the config's paths anchored, its claims
   file loaded, the config checked (one line naming the bad key and value, then exit), its jobs,
   the cells they copy, the code hashes, the calibrated arms and the training settings.
3. `plan.last_checks()`, once every rule is defined: the report's refusal, a target error, the
   config warnings.

Then `plan.summary(ledger_news)` on success: the run's last lines.

A named run (`run: {name: ...}`) works in runs/<name>/ of where snakemake was started: its own
results/, logs/, resources/, benchmarks and .snakemake/, so that it overwrites no other run
(PyPSA-Eur's `run: name:`); the Snakefile's `workdir:` moves there before step 2, so that every
path below is relative to it. Not in a host workflow, not with --directory (which overrides
`workdir:`); a command that only plans a named run not yet run plans in a throwaway folder
(creates nothing in runs/).

Where the Snakefile is loaded by URL (`github(...)`, snakedeploy; docs/MODULE.md) there is no
checkout: its files come through `workflow.source_path` (cached locally) and its code is the
installed depthlab package. In a checkout, its own paths are read directly
(`workflow.source_path` copies a local file to a new temporary folder on each start, which
would change the config and rerun what depends on it)."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import inspect
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from depthlab.planner import built, resources, startup
from depthlab.planner.calibration import calibrated_arms
from depthlab.planner.catalogue import Catalogue, unshared
from depthlab.planner.codehash import (
    BASE,
    CALIBRATED_CODE,
    MEASURE_CODE,
    TRAIN_CODE,
    code_hash,
    study_code_hash,
)
from depthlab.planner.console import calm, closing_summary, remeasured
from depthlab.planner.documented import ShippedConfigs
from depthlab.planner.grid import arm_settings
from depthlab.planner.overlay import DEFAULTS
from depthlab.planner.reuse import owner_shards, reuse
from depthlab.planner.validate import check_config, reject_misspelt_arms, reject_off_grid_options
from depthlab.vocabulary import paths
from depthlab.vocabulary.corpus import CORPUS_SHA256, SHIPPED
from depthlab.vocabulary.settings import ConfigError
from depthlab.vocabulary.train_settings import training_arms

# the rules whose jobs measure or train a shard (a shard measured again is announced)
SHARD_RULES = ("measure", "measure_calibrated", "train")


def checkout(basedir) -> str | None:
    """The repository root of a workflow whose Snakefile lies in `basedir` (its workflow/
    folder, `workflow.current_basedir`), or None where the Snakefile is loaded by URL: a local
    Snakefile's folder is a path, a URL's is not."""
    if isinstance(basedir, (str, os.PathLike)):
        return os.path.dirname(os.fspath(basedir))
    return None


def jobs_import(src: str) -> None:
    """The package in a checkout's `src` is the one its jobs import (PYTHONPATH, first), as it
    is the one the Snakefile imports and the plan hashes: scripts otherwise import whatever
    `pip install -e` points at."""
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [src, *filter(None, [os.environ.get("PYTHONPATH")])])


def file_hash(path: str) -> str:
    """sha256 of a file's bytes (16 hex digits), '' where it does not exist."""
    if not os.path.exists(path):
        return ""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def existing(files: Iterable[str]) -> Callable:
    """An input function: the files of a list that exist, read when the DAG is built."""
    files = list(files)
    return lambda wildcards: [p for p in files if os.path.exists(p)]


class rule_function:
    """A Plan's method that Snakemake calls with a job's wildcards (an input, params, resources
    or priority function), as a plain function with its signature cached: Snakemake inspects a
    job function's signature at every call, several times per job; inspect.signature returns
    fn.__signature__ when set (a bound method's is made anew at each call), which keeps the DAG
    of large grids fast (benchmarks/: `snakemake -n` of 5,000 jobs). Made once per Plan, on its
    first use."""

    def __init__(self, method: Callable):
        self.method = method
        self.__doc__ = method.__doc__

    def __set_name__(self, owner, name: str):
        self.name = name

    def __get__(self, plan, owner=None):
        if plan is None:
            return self
        bound = self.method.__get__(plan, owner)

        def function(*args, **kwargs):
            return bound(*args, **kwargs)

        function.__signature__ = inspect.signature(bound)
        function.__name__ = function.__qualname__ = self.name
        function.__doc__ = self.__doc__
        plan.__dict__[self.name] = function  # the plan's own from now on
        return function


class Plan:
    """One parse of the workflow by Snakemake (the module docstring's three steps). Handed in:
    `workflow` (Snakemake's), `config` (the Snakefile's global config, replaced in place by the
    merged and checked one), `argv` (sys.argv) and `parser` (snakemake.cli.get_argument_parser),
    `validate` (snakemake.utils.validate: checks a config against the schema and fills in its
    defaults) and `source`: a path relative to workflow/ to a local file, which is
    workflow.source_path called from the Snakefile (it reads the folder of the file that calls
    it: called from here, it would read this package's)."""

    def __init__(self, workflow, config: dict, argv: list[str], parser: Callable,
                 validate: Callable[[dict, str], object], source: Callable[[str], object]):
        self.workflow, self.config, self.validate, self.source = workflow, config, validate, source
        self.depthlab = checkout(workflow.current_basedir)
        if self.depthlab and os.path.isdir(f"{self.depthlab}/src"):
            jobs_import(f"{self.depthlab}/src")
        self.schema = (f"{self.depthlab}/workflow/schemas/config.schema.yaml" if self.depthlab
                       else str(source("schemas/config.schema.yaml")))
        self.defaults_file = f"{self.depthlab}/{DEFAULTS}" if self.depthlab else None
        # config/config.yaml, read once (the shipped configs' hints merge onto it too)
        self.defaults = startup.read_yaml(self.defaults_file or source(f"../{DEFAULTS}"))
        # whether a host workflow uses depthlab as a module (Snakemake 9.27: the main
        # workflow's modifier has no base Snakefile, a module's has; `is_module` is True for both)
        self.as_module = not workflow.modifier.is_main_snakefile()
        settings = workflow.config_settings
        self.start = startup.Start(
            command=startup.command_line(argv, parser, main=not self.as_module),
            as_module=self.as_module,
            started_in=os.environ.setdefault("DEPTHLAB_STARTED_IN", os.getcwd()),
            cli_config=settings.config,
            configfiles=list(settings.configfiles),
            defaults=self.defaults,
            defaults_file=self.defaults_file,
            replaced=settings.replace_workflow_config,
        )
        self.started = time.time()
        self.console = None if self.as_module else self._calm()
        # a `base:` among the workflow's own files: its folder, or by URL its source cache
        self.given, self.merged = self.start.merge(
            config, self.depthlab or (lambda name: source(f"../{name}")))
        config.clear()
        # a copy: plan() fills in defaults and paths, `merged` stays the config as given
        config.update(copy.deepcopy(self.merged))
        startup.importable_from(self.start.started_in)  # a config's own block (module:function)
        self.run_name = self.start.named_run(config, startup.read_yaml(self.schema))
        self.run_prefix = f"runs/{self.run_name}/" if self.run_name and not self.as_module else ""
        self.report_command = self.start.report_command(argv[0] if argv else "",
                                                        self.run_prefix)
        # where the Snakefile's `workdir:` moves: None without a named run, in a host workflow
        self.run_folder = self.start.run_folder(self.run_name)

    def _calm(self):
        """The calm console (depthlab.planner.console): Snakemake's per-job blocks go to its log
        file only, its progress line shows once per tenth of the jobs, and the run ends with a
        summary (`summary`); --verbose shows everything; a host workflow keeps its own console.
        Once the jobs are planned: one line on the shards measured again."""
        workflow = self.workflow
        return calm(
            logging.getLogger("snakemake.logging").handlers,
            lambda: workflow.dryrun,
            quiet=not workflow.output_settings.verbose,
            planned=lambda: print(*remeasured(self.remeasured_shards()), sep="\n",
                                  file=sys.stderr),
        )

    @property
    def documents(self) -> bool:
        """Whether the docs_* rules (rules/report.smk) are defined: they rewrite this checkout's
        README.md and docs/, so not in a host workflow, nor in a named run (the documented
        numbers are the default run's), nor where the workflow is loaded by URL."""
        return not self.as_module and not self.run_name and bool(self.depthlab)

    # -- step 2: in the run's folder, the config checked and its jobs planned

    def plan(self, studies: dict, targets: list, load_claims: Callable[[str], dict],
             hook_points: dict | None = None) -> None:
        """Check the config (a ConfigError is one line, then exit, before any job) and plan its
        jobs, in the folder the run works in (a named run's), by the catalogue of studies, which
        lies in the layers above the planner: `studies` and `targets` (depthlab.studies'
        STUDIES and TARGETS, every declared target), `load_claims`
        (depthlab.claims.schema's: a claims file read and checked) and `hook_points`
        (depthlab.studies.HOOK_POINTS: study -> the points an own block must mark)."""
        config, start = self.config, self.start
        self.targets = targets
        # the config's relative paths name files relative to where snakemake was started: made
        # relative to the run's folder (absolute from a dry run's throwaway folder, elsewhere)
        startup.anchored(config, start.started_in, absolute=start.throwaway)
        # the default claims file (this workflow's own), checked too (validate fills defaults)
        config.setdefault("claims", os.path.relpath(f"{self.depthlab}/config/claims.yaml")
                          if self.depthlab else str(self.source("../config/claims.yaml")))
        try:
            self.claims = load_claims(config["claims"])
            reject_misspelt_arms(config, self.targets, self.claims)
            self.catalogue = Catalogue(config, check_config(config, self.schema, studies,
                                                    hook_points),
                                       self.targets, self.claims["claims"])
            reject_off_grid_options(config, list(self.catalogue.jobs.values()),
                                    self.catalogue.targets)
        except ConfigError as err:
            start.config_error(err)
        self.validate(config, self.schema)  # passes now; fills the schema's defaults
        if config.get("run") == {}:
            # no named run: the config that provenance records stays as before `run` existed
            del config["run"]
        self.jobs = self.catalogue.jobs
        # cells whose numbers another job's cell gives are copied from its shard, not measured
        # again (depthlab.planner.reuse); calibrated arms and training studies are never shared
        self.reused = reuse(list(self.jobs.values()), unshared(config))
        self.measure_hash = code_hash(MEASURE_CODE)
        self.calibrated_hash = code_hash(CALIBRATED_CODE)
        self.train_hash = code_hash(TRAIN_CODE)
        self.base_hash = code_hash(BASE)
        self.study_hash = {study: study_code_hash(study) for study in config["studies"]}
        self.claims_hash = code_hash((*BASE, "claims"))
        # the protocol's freeze (config/frozen.yaml beside the claims file), read by the claims
        # rule: an exploratory run is graded at it where it holds, a confirmatory run only at it
        self.frozen = os.path.join(os.path.dirname(config["claims"]), "frozen.yaml")
        # the config files shipped in config/ (a target this config cannot build names those
        # that can); none where the workflow is loaded by URL (its config/ cannot be listed)
        self.shipped_configs = (ShippedConfigs(self.depthlab, self.defaults)
                                if self.depthlab else {})
        # what each arm's cells share, as sorted JSON: the ledger's comparability with the notes
        self.arm_settings = json.dumps(arm_settings(list(self.jobs.values())), sort_keys=True)
        # each measure job's predicted seconds, and its priority: the scheduler starts the ready
        # jobs of highest priority, so the longest chains of measure jobs go first and short
        # jobs fill the cores at the end of a run, not a long one alone on a core
        self.longest_first = resources.LongestFirst(self.jobs, self.reused)
        # arms with `calibrate_from`: (study, arm) -> the arm it is calibrated from
        try:
            self.calibrated = calibrated_arms(config, self.jobs)
        except ConfigError as err:
            start.config_error(err)
        # the cells and seeds behind every fit a target reads, as this config plans them and,
        # for a report (which runs no job), as the fits on disk were measured: last_checks
        # refuses a report whose fits differ, so that its captions (this config's seeds) are
        # the files' (planner.built)
        # (read only for a report: a run compares nothing)
        reporting = bool(start.command and start.command.report)
        self.planned_fits, self.study_cells = (self.catalogue.fit_cells() if reporting
                                               else ({}, {}))
        self.measured_fits = {fit: built.measured(fit) for fit in self.planned_fits}
        # the config as results/provenance.json records it (the report checks it is this run's)
        self.config_text = json.dumps(config, sort_keys=True)
        # training studies (a `training:` block): (study, arm) -> its training settings
        try:
            self.training = training_arms(config, self.jobs.values())
        except ConfigError as err:
            start.config_error(err)
        # the shipped corpus is the corpus rule's input unless the config names another source
        other_corpus = config.get("corpus_url") or config.get("corpus_path")
        self.shipped_corpus = [] if other_corpus else (
            f"{self.depthlab}/{SHIPPED}" if self.depthlab else str(self.source(f"../{SHIPPED}")))
        self.corpus_sha256 = config.get("corpus_sha256") or CORPUS_SHA256

    @property
    def calibrated_arms(self) -> str:
        """The measure rule of calibrated arms' arm pattern ("(?!)" matches nothing when there
        are none)."""
        return "|".join(sorted({arm for _, arm in self.calibrated})) or "(?!)"

    @property
    def training_studies(self) -> str:
        """The train rule's study pattern ("(?!)": no study trains)."""
        return "|".join(sorted({study for study, _ in self.training})) or "(?!)"

    @property
    def frozen_hash(self) -> str:
        """The freeze's content hash (file_hash): a new freeze regrades the claims."""
        return file_hash(self.frozen)

    @property
    def frozen_before(self) -> str:
        """The freeze before a new one (its history of spent pools), read when the workflow is
        parsed: Snakemake removes a job's output before the job runs."""
        return Path(self.frozen).read_text() if os.path.exists(self.frozen) else ""

    @property
    def config_files(self) -> list[str]:
        """The config files of this run, relative to the checkout (docs/RESULTS.md names them:
        which run graded what)."""
        return [os.path.relpath(f, self.depthlab) for f in self.workflow.configfiles]

    # -- the rules' input, params and resources functions (of a job's wildcards)

    def job_of(self, wildcards):
        """The measure or train job a rule's wildcards name."""
        return self.jobs[(wildcards.study, wildcards.arm, wildcards.job)]

    def copied_cells(self, wildcards) -> dict:
        """The cells a measure job copies from other jobs' shards, label -> Source."""
        return self.reused.get((wildcards.study, wildcards.arm, wildcards.job), {})

    @rule_function
    def job_cells(self, wildcards) -> str:
        """The cells of one measure job as a sorted JSON string (a change reruns the job)."""
        return self.job_of(wildcards).cells_json()

    @rule_function
    def job_owners(self, wildcards) -> list[str]:
        """The shards a measure job copies cells from (their owners measure them), in the order
        of depthlab.planner.reuse.owner_shards."""
        return owner_shards(self.copied_cells(wildcards).values())

    @rule_function
    def job_reused(self, wildcards) -> str:
        """The cells a measure job copies, label -> [study, arm, job, label] of the owner, as
        sorted JSON (a change reruns the job)."""
        copies = self.copied_cells(wildcards)
        return json.dumps(
            {label: dataclasses.astuple(source) for label, source in copies.items()},
            sort_keys=True,
        )

    @rule_function
    def calibration_source(self, wildcards) -> str:
        """The shard of the same job of the arm a calibrated arm is calibrated from."""
        study, arm = wildcards.study, wildcards.arm
        return self.jobs[(study, self.calibrated[(study, arm)], wildcards.job)].shard

    @rule_function
    def measure_mem_mb(self, wildcards, attempt) -> int:
        """Memory request of one measure job in MB (depthlab.planner.resources), more on each
        retry."""
        job, copied = self.job_of(wildcards), self.copied_cells(wildcards)
        return resources.mem_mb(resources.measure_mb(job, copied), attempt)

    @rule_function
    def measure_gpu_mem_mb(self, wildcards, attempt) -> int:
        """Device memory of one measure job on a GPU in MB (depthlab.planner.resources.
        device_mb, a bound: no margin), more on each retry; 0 on the CPU."""
        job, copied = self.job_of(wildcards), self.copied_cells(wildcards)
        return resources.mem_mb(resources.device_mb(job, copied), attempt, margin=1.0)

    @rule_function
    def measure_runtime(self, wildcards, attempt) -> int:
        """Runtime request of one measure job in minutes (depthlab.planner.resources)."""
        key = (wildcards.study, wildcards.arm, wildcards.job)
        return resources.runtime_min(self.longest_first.own(key), attempt)

    @rule_function
    def measure_priority(self, wildcards) -> int:
        """A measure job's predicted seconds plus the longest chain of jobs that copy from it."""
        return round(self.longest_first((wildcards.study, wildcards.arm, wildcards.job)))

    @rule_function
    def train_mem_mb(self, wildcards, attempt) -> int:
        """Memory request of one train job in MB (depthlab.planner.resources)."""
        return resources.mem_mb(resources.train_mb(self.job_of(wildcards)), attempt)

    @rule_function
    def train_gpu_mem_mb(self, wildcards, attempt) -> int:
        """Device memory of one train job on a GPU in MB (resources.train_device_mb); 0 on the
        CPU."""
        return resources.mem_mb(
            resources.train_device_mb(self.job_of(wildcards)), attempt, margin=1.0)

    def train_seconds(self, wildcards) -> float:
        """Predicted seconds of one train job on a core, or on its device by the speeds fitted
        there (depthlab.planner.resources)."""
        job = self.job_of(wildcards)
        return resources.train_seconds(job, self.training[(job.study, job.arm)])

    @rule_function
    def train_runtime(self, wildcards, attempt) -> int:
        """Runtime request of one train job in minutes."""
        return resources.runtime_min(self.train_seconds(wildcards), attempt)

    @rule_function
    def train_priority(self, wildcards) -> int:
        """Longest first, on measure_priority's scale: the predicted seconds."""
        return round(self.train_seconds(wildcards))

    @rule_function
    def job_training(self, wildcards) -> str:
        """The training settings of a train job's arm as a sorted JSON string (a change reruns
        the job)."""
        settings = self.training[(wildcards.study, wildcards.arm)]
        return json.dumps(dataclasses.asdict(settings), sort_keys=True)

    @rule_function
    def arm_axes(self, wildcards) -> str:
        """The axis names of every arm of the study, as sorted JSON (the fit reads them)."""
        arms = self.config["studies"][wildcards.study]["arms"]
        return json.dumps(
            {arm: list(spec["axes"]) for arm, spec in arms.items()}, sort_keys=True)

    @rule_function
    def study_code(self, wildcards) -> str:
        """The code hash of a study's fits and renders (codehash.study_code_hash)."""
        return self.study_hash[wildcards.study]

    @staticmethod
    def report_outputs(target, report: Callable) -> dict:
        """A target's outputs, the one the report shows (a figure's PNG, a table's HTML page)
        wrapped in `report` (Snakemake's report()) under its note's category; its caption is
        the declaration's (workflow/report/target.rst renders params.caption)."""
        shown = "png" if target.kind == "figure" else "html"
        outputs = dict(target.outputs)
        outputs[shown] = report(
            outputs[shown],
            caption="../report/target.rst",
            category=target.study,
            subcategory=f"{target.kind}s",
            labels={"name": target.name, "type": target.kind},
        )
        return outputs

    existing = staticmethod(existing)  # rules/report.smk's inputs that may not exist

    # -- once the jobs are planned, and once every rule is defined

    def remeasured_shards(self) -> list[tuple[str, bool]]:
        """(shard, whether its cells' settings changed) for each measure or train job that runs
        again because its params changed since its shard was made (Snakemake's reason for it);
        called once the jobs are planned (the console's `planned`)."""
        dag, out = self.workflow.dag, []
        for job in dag.needrun_jobs():
            if job.rule.name not in SHARD_RULES:
                continue
            changed = dag.reason(job).params_changed
            if changed:
                code = str(job.params.code)
                out.append((job.output[0], any(code not in str(v) for v in changed.only_new)))
        return out

    def last_checks(self) -> None:
        """Once every rule is defined, before any job: the report refuses results/ built with
        another config than this one, by the provenance of a full run and by the cells and seeds
        of each fit it shows (the workflow is parsed before Snakemake says it builds a report,
        so the command line tells); a mistyped target, a declared target this config cannot
        build (rules/render.smk; its failing rule stays for a host workflow and the Python API,
        which give no command line) or a path no rule makes is one line (the closest rule, the
        configs that can, the closest file). Then a warning line naming each study setting
        given here that arms override with their own (an arm's setting or axis wins,
        config/README.md), and, on a device whose speeds were never fitted, that the jobs ask
        for the CPU model's runtimes (resources)."""
        start = self.start
        refusal = (start.report_refusal(self.config_text, paths.PROVENANCE)
                   or built.refusal(self.measured_fits, self.planned_fits, self.study_cells))
        if refusal:
            sys.exit(refusal)
        rules = list(self.workflow.rules)
        error = start.target_error(
            [r.name for r in rules],
            [str(o) for r in rules for o in r.output if not o.contains_wildcard()],
            lambda path: any(r.is_producer(path) for r in rules),
            [t for t in self.targets if t not in self.catalogue.targets],
            self.catalogue.arms,
            self.shipped_configs,
            self.catalogue.grid,
        )
        if error:
            start.leave(f"target error: {error}")
        for line in start.warnings(self.given, self.merged):
            print(line, file=sys.stderr)
        if start.command and (unfitted := resources.unfitted(self.jobs.values())):
            print(unfitted, file=sys.stderr)

    def summary(self, ledger_news: Callable[[str, str, float], str]) -> None:
        """The run's last lines (onsuccess): jobs, wall time, the ledger's counts
        (`ledger_news`, depthlab.claims.publish's, handed in: pandas, and a layer above) and
        where to look; none in a host workflow (its console is its own)."""
        if self.console is None:
            return
        news = ledger_news(paths.LEDGER["parquet"], self.run_prefix + paths.LEDGER["md"],
                           self.started)
        print(closing_summary(self.console.finished, time.time() - self.started, news,
                              self.report_command), file=sys.stderr)
