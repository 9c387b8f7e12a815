"""Bad configs: each is rejected before any job runs, with one line naming the key and
the offending value, and no Python traceback as the user-facing error."""

from __future__ import annotations

import math
import re

import pytest
import torch
import yaml
from conftest import DELETE, ROOT, copy_workflow, edited, run_snakemake, whole

from depthlab.claims.schema import load_claims
from depthlab.planner.catalogue import Catalogue
from depthlab.planner.documented import shipped_configs
from depthlab.planner.overlay import config_of, error_keys, origin, read_config
from depthlab.planner.validate import (
    check_config,
    reject_misspelt_arms,
    reject_off_grid_options,
    unavailable_target,
    unknown_path,
    unknown_target,
)
from depthlab.studies import STUDIES, TARGETS
from depthlab.vocabulary.placements import ORDER
from depthlab.vocabulary.settings import ConfigError

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
MISSING_FIT = str(ROOT / "tests/data/claims_missing_fit.yaml")  # an entry with fit: nosuchstudy

GOOD = {
    "threads": 1,
    "studies": {"stack96": {
        "settings": {"d_model": 16, "heads": 4, "tokens": 4, "seeds": 2},
        "arms": {"a": {"axes": {"placement": ["pre"], "depth": [2, 3]}, "pack": ["depth"]}},
    }},
}
STUDY = ("studies", "stack96")
SETTINGS = (*STUDY, "settings")
ARM = (*STUDY, "arms", "a")
AXES = (*ARM, "axes")
NO_GPU = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")

# (id, {key path: new value or DELETE}, fragments the message must contain)
CASES = [
    ("unknown_key", {("colour",): "red"}, ["unknown key 'colour'"]),
    ("misspelt_top_key", {("studies",): DELETE, ("studys",): GOOD["studies"]},
     ["unknown key 'studys'", "did you mean 'studies'"]),
    ("misspelt_setting", {(*SETTINGS, "depht"): 3},
     ["studies.stack96.settings", "'depht'", "did you mean 'depth'"]),
    ("misspelt_axis", {(*AXES, "depht"): [2]}, ["studies.stack96.arms.a.axes", "'depht'"]),
    ("misspelt_arm_key", {(*ARM, "axes"): DELETE, (*ARM, "axis"): {"depth": [2]}},
     ["studies.stack96.arms.a", "unknown key 'axis'", "did you mean 'axes'"]),
    ("threads_wrong_type", {("threads",): "two"}, ["threads='two'", "integer"]),
    ("depth_wrong_type", {(*SETTINGS, "depth"): "3"}, ["settings.depth='3'", "integer"]),
    ("causal_wrong_type", {(*SETTINGS, "causal"): "yes"}, ["causal='yes'", "true or false"]),
    ("tokens_not_integer", {(*SETTINGS, "tokens"): 2.5}, ["tokens=2.5", "integer"]),
    ("depth_zero", {(*SETTINGS, "depth"): 0}, ["settings.depth=0"]),
    ("depth_negative_in_grid", {(*AXES, "depth"): [2, -1]}, ["studies.stack96.arms.a", "depth=-1"]),
    ("depth_bool_in_grid", {(*AXES, "depth"): [True]}, ["depth=True"]),
    ("seeds_zero", {(*SETTINGS, "seeds"): 0}, ["settings.seeds=0"]),
    ("seeds_zero_in_grid", {(*AXES, "seeds"): [0]}, ["seeds=0"]),
    ("unknown_placement", {(*SETTINGS, "placement"): "middle"},
     ["placement='middle'", "'post', 'pre', 'none'"]),
    ("unknown_placement_in_grid", {(*AXES, "placement"): ["pre", "middle"]},
     ["studies.stack96.arms.a", "placement='middle'"]),
    ("placement_word_not_all", {(*AXES, "placement"): "every"},
     ["studies.stack96.arms.a.axes.placement='every'"]),
    ("heads_not_dividing_d_model", {(*SETTINGS, "heads"): 3}, ["heads=3", "d_model=16"]),
    ("unknown_dtype", {(*SETTINGS, "dtype"): "float16"}, ["dtype='float16'", "float64"]),
    ("unknown_dtype_in_grid", {(*AXES, "dtype"): ["float64", "bfloat16"]}, ["dtype='bfloat16'"]),
    ("unknown_device", {("device",): "gpu"}, ["device='gpu'", "'cpu', 'cuda'"]),
    pytest.param("cuda_without_gpu", {("device",): "cuda"}, ["device='cuda'", "no CUDA device"],
                 marks=NO_GPU),
    pytest.param("cuda_in_grid_without_gpu", {(*AXES, "device"): ["cuda"]},
                 ["studies.stack96.arms.a", "device='cuda'", "no CUDA device"], marks=NO_GPU),
    ("out_scale_zero", {(*SETTINGS, "out_scale"): 0}, ["out_scale=0", "> 0"]),
    ("out_scale_negative_in_grid", {(*AXES, "out_scale"): [1, -3]}, ["out_scale=-3"]),
    ("out_scale_string_in_grid", {(*AXES, "out_scale"): [1, "3"]}, ["out_scale='3'"]),
    ("out_scale_infinite", {(*SETTINGS, "out_scale"): math.inf}, ["out_scale=inf"]),
    ("empty_grid_axis", {(*AXES, "depth"): []}, ["studies.stack96.arms.a.axes.depth=[]", "empty"]),
    ("empty_axes", {AXES: {}}, ["studies.stack96.arms.a.axes={}", "empty"]),
    ("no_arms", {(*STUDY, "arms"): {}}, ["studies.stack96.arms={}", "empty"]),
    ("no_studies", {("studies",): {}}, ["studies={}", "empty"]),
    ("duplicate_grid_values", {(*AXES, "depth"): [2, 3, 2]}, ["axes.depth=[2, 3, 2]", "[2]"]),
    ("duplicate_grid_values_int_float", {(*AXES, "out_scale"): [1, 1.0]},
     ["axes.out_scale=[1, 1.0]"]),
    ("pack_names_missing_axis", {(*ARM, "pack"): ["tokens"]},
     ["studies.stack96.arms.a.pack", "'tokens'"]),
    ("pack_names_unknown_setting", {(*ARM, "pack"): ["depht"]},
     ["pack[0]='depht'", "did you mean 'depth'"]),
    ("pack_not_a_list", {(*ARM, "pack"): "depth"}, ["pack='depth'", "a list"]),
    ("missing_axes", {AXES: DELETE}, ["studies.stack96.arms.a", "missing key 'axes'"]),
    ("settings_empty", {SETTINGS: None}, ["studies.stack96.settings=None", "a mapping"]),
    ("study_name_with_dash", {STUDY: DELETE, ("studies", "my-study"): GOOD["studies"]["stack96"]},
     ["'my-study'", "must match"]),
    ("study_name_with_underscore_beside_a_good_one",
     {("studies", "my_study"): GOOD["studies"]["stack96"]}, ["name 'my_study' must match"]),
    ("analysis_tolerance_nan", {(*STUDY, "analysis"): {"omega_tolerance": math.nan}},
     ["studies.stack96.analysis.omega_tolerance=nan", "finite"]),
    ("analysis_preserved_within_nan", {(*STUDY, "analysis"): {"preserved_within": math.nan}},
     ["studies.stack96.analysis.preserved_within=nan", "finite"]),
    ("setting_nan_in_grid", {(*AXES, "out_scale"): [1, math.nan]},
     ["studies.stack96.arms.a.axes.out_scale[1]=nan", "finite"]),
    ("tokens_one_in_grid", {(*AXES, "tokens"): [1]}, ["tokens=1", "at least 2"]),
    ("analysis_out_of_range", {(*STUDY, "analysis"): {"single_depth": 0}},
     ["analysis.single_depth=0"]),
    ("claims_entry_with_missing_fit", {("claims",): MISSING_FIT},
     ["claims_missing_fit.yaml", "example.missing_fit", "measure.fit='nosuchstudy'"]),
    ("study_without_a_package", {STUDY: DELETE, ("studies", "mystudy"): GOOD["studies"]["stack96"]},
     ["studies.mystudy", "no study package", "known studies: stack96, theory096"]),
    ("misspelt_study_without_arms", {("studies", "stak96"): {"settings": {"seeds": 3}}},
     ["studies.stak96", "no study package", "did you mean 'stack96'"]),
    ("setting_at_the_top_level", {("seeds",): 3},
     ["unknown key 'seeds'", "a run setting", "studies.<study>.settings"]),
    ("setting_beside_the_arms", {(*STUDY, "depth"): 3},
     ["studies.stack96: unknown key 'depth'", "studies.<study>.settings"]),
    ("claims_file_missing", {("claims",): "no/such/claims.yaml"},
     ["claims='no/such/claims.yaml'", "no such file"]),
    ("jacobian_dirs_negative", {(*SETTINGS, "jacobian_dirs"): -1}, ["jacobian_dirs=-1", ">= 0"]),
    ("jacobian_dirs_not_integer_in_grid", {(*AXES, "jacobian_dirs"): [2, 2.5]},
     ["studies.stack96.arms.a", "jacobian_dirs=2.5", "integer"]),
    ("update_lr_negative_in_grid", {(*AXES, "update_lr"): [-0.001]},
     ["studies.stack96.arms.a", "update_lr=-0.001", "non-negative"]),
    ("update_optimizer_unknown", {(*SETTINGS, "update_lr"): 0.001,
                                  (*SETTINGS, "update_optimizer"): "rmsprop"},
     ["update_optimizer='rmsprop'", "'adam', 'sgd'"]),
    ("update_optimizer_without_update_lr_in_grid", {(*AXES, "update_optimizer"): ["sgd"]},
     ["studies.stack96.arms.a", "update_optimizer='sgd'", "update_lr > 0"]),
    # the probes that run the model again need every block held in one pass
    ("jacobian_in_a_forward_only_pass", {(*SETTINGS, "jacobian_dirs"): 2,
                                         (*SETTINGS, "grad_of"): "none"},
     ["studies.stack96.arms.a", "jacobian_dirs=2", "every block held", "grad_of='none'"]),
    ("update_in_a_recomputed_pass", {(*SETTINGS, "update_lr"): 0.001, (*SETTINGS, "pass_mb"): 1,
                                     (*SETTINGS, "d_model"): 128, (*SETTINGS, "tokens"): 128},
     ["studies.stack96.arms.a", "update_lr=0.001", "pass_mb=1", "recomputed"]),
]


def bad_config(edits: dict) -> dict:
    """GOOD with `edits` applied, as read back from a YAML file."""
    return yaml.safe_load(yaml.safe_dump(edited(GOOD, edits)))


def case_id(case) -> str:
    return case.values[0] if hasattr(case, "values") else case[0]


@pytest.mark.parametrize("case, edits, fragments", CASES, ids=[case_id(c) for c in CASES])
def test_bad_config_is_rejected_naming_key_and_value(case, edits, fragments):
    """What the plan does at parse time (depthlab.planner.load: check the config, then load
    its claims file): a ConfigError (which it prints as one line and exits with, before any
    job) and nothing else; any other exception would reach the user as a traceback."""
    config = bad_config(edits)
    with pytest.raises(ConfigError) as err:
        check_config(config, SCHEMA, STUDIES)
        load_claims(config.get("claims", ROOT / "config/claims.yaml"))
    message = str(err.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_the_good_config_passes():
    assert len(check_config(bad_config({}), SCHEMA, STUDIES)) == 1


def test_placement_all_is_every_placement_of_the_registry_in_its_order():
    jobs = check_config(bad_config({(*AXES, "placement"): "all"}), SCHEMA, STUDIES)
    assert [j.cells[0].settings.placement for j in jobs] == list(ORDER)
    assert all(len(j.cells) == 2 for j in jobs)  # the packed depths


# the same through the command line, for one case of each kind of check (each costs a parse)
CLI_CASES = ("misspelt_setting", "heads_not_dividing_d_model", "pack_names_missing_axis",
             "cuda_without_gpu", "claims_entry_with_missing_fit", "study_without_a_package")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return copy_workflow(tmp_path_factory.mktemp("badconfig"))


@pytest.mark.workflow
@pytest.mark.parametrize("case, edits, fragments",
                         [c for c in CASES if case_id(c) in CLI_CASES], ids=list(CLI_CASES))
def test_snakemake_prints_one_line_and_starts_nothing(workdir, case, edits, fragments):
    path = workdir / f"{case}.yaml"
    path.write_text(yaml.safe_dump(bad_config(edits)))
    run = run_snakemake(workdir, "--cores", "1", *whole(path.name), check=False)
    output = run.stdout + run.stderr
    errors = [line for line in output.splitlines() if "error" in line.lower()]
    assert run.returncode == 1, output
    # the file the bad key came from, and its line (the claims file's error names that file)
    where = "" if case == "claims_entry_with_missing_fit" else rf"{case}\.yaml:\d+: "
    assert len(errors) == 1 and re.match(f"config error: {where}", errors[0]), output
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])
    assert "Traceback" not in output and 'File "' not in output, output
    assert not (workdir / "results").exists()


@pytest.mark.parametrize("message, keys", [
    ("studies.s.settings: unknown key 'depht' (did you mean 'depth'?)",
     ["studies", "s", "settings", "depht"]),
    ("studies.s.arms.a.axes.out_scale[1]=nan must be finite",
     ["studies", "s", "arms", "a", "axes", "out_scale", 1]),
    ("run.name='a/b': 'a/b' does not match", ["run", "name"]),
    ("corpus_path: no file 'x.txt'", ["corpus_path"]),
    ("unknown key 'colour'", ["colour"]),
    ("claims file x/claims.yaml: a.b: measure.fit='x'", []),
    ("broken.yaml:4: mapping values are not allowed here", ["broken", "yaml"]),
])
def test_a_config_error_names_its_key_path(message, keys):
    assert error_keys(message) == keys


def test_a_config_error_names_the_file_and_line_that_gave_its_key(tmp_path):
    """The first source (the one that wins) holding most of the key path: a user's file over
    the base it names over the defaults; --config over every file; '' where none holds it."""
    (tmp_path / "base.yaml").write_text(
        "studies:\n  s:\n    settings:\n      seeds: 3\n      depht: 2\n")
    (tmp_path / "mine.yaml").write_text(
        "base: base.yaml\nstudies:\n  s:\n    settings: {seeds: 4}\n"
        "    arms:\n      a:\n        axes:\n          out_scale: [1, .nan]\n")
    sources = [("--config", {"threads": "two"}, None),
               *((name, read_config(tmp_path / name), tmp_path / name)
                 for name in ("mine.yaml", "base.yaml")),
               ("config/config.yaml", {"threads": 1, "studies": {"t": {}}}, None)]
    assert origin("studies.s.settings: unknown key 'depht'", sources) == "base.yaml:5"
    assert origin("studies.s.settings.seeds=4 is wrong", sources) == "mine.yaml:4"
    assert origin("studies.s.arms.a.axes.out_scale[1]=nan must be finite", sources) \
        == "mine.yaml:8"
    assert origin("base='base.yaml': no config file of that name", sources) == "mine.yaml:1"
    assert origin("threads='two' must be an integer", sources) == "--config"
    assert origin("studies.t: no study package", sources) == "config/config.yaml"
    assert origin("colour: unknown", sources) == ""
    assert origin("claims file x.yaml: a: b", sources) == ""


def test_a_target_this_config_cannot_build_says_which_config_can():
    """A declared target whose study or arms the config lacks names the shipped configs that
    have them (the render rules make it a rule that fails with this line)."""
    from depthlab.studies import BY_NAME

    shipped = shipped_configs(ROOT)
    # never a confirmatory run (its seeds are the protocol's pool), though it has the arms
    assert "config/confirm_fixes.yaml" not in shipped and "config/fixes.yaml" in shipped
    target = BY_NAME["fig_fixes_grad_readings"]
    why = target.unavailable({"stack96": ["grad"]}, shipped)
    assert why == ("fig_fixes_grad_readings: this config has no arm depth, grad_* of study "
                   "'fixes'; run it with --configfile config/fixes.yaml or "
                   "config/fixes_collapse.yaml or config/models_collapse.yaml or "
                   "config/tiny_fixes.yaml")
    assert target.unavailable({"fixes": ["grad_ce"]}, shipped) == ""
    assert "no arm depth, grad_*" in target.unavailable({"fixes": ["width_64"]}, shipped)


def test_a_corpus_path_that_names_no_file_is_one_line_before_any_job(tmp_path):
    config = {**GOOD, "corpus_path": str(tmp_path / "nope.txt")}
    with pytest.raises(ConfigError, match=r"^corpus_path: no file '.*nope.txt'"):
        check_config(config, SCHEMA, STUDIES)
    (tmp_path / "nope.txt").write_text("text")
    assert check_config(config, SCHEMA, STUDIES)


@pytest.mark.parametrize("targets, found", [
    (["all", "fig_grad_ratio_by_depth"], ""),
    (["results/figures/x.png", "report.html"], ""),  # paths are Snakemake's to judge
    (["fig_grad_ratio_by_dept"], "no rule or file 'fig_grad_ratio_by_dept' (did you mean "
                                 "'fig_grad_ratio_by_depth'?); snakemake --list-target-rules"),
    (["all", "zzz"], "no rule or file 'zzz'; snakemake --list-target-rules"),
])
def test_a_mistyped_target_names_the_closest_rule(targets, found):
    why = unknown_target(targets, ["all", "fig_grad_ratio_by_depth", "measure"])
    assert why.startswith(found) and bool(why) == bool(found)


@pytest.mark.workflow
def test_snakemake_says_did_you_mean_for_a_mistyped_target(workdir):
    run = run_snakemake(workdir, "-n", "fig_grad_ratio_by_dept", check=False)
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    assert [line for line in output.splitlines() if "error" in line.lower()] == [
        "target error: no rule or file 'fig_grad_ratio_by_dept' (did you mean "
        "'fig_grad_ratio_by_depth'?); snakemake --list-target-rules lists the targets"]


def test_a_target_without_an_arm_it_needs_is_not_built_and_names_the_configs_with_it():
    """The width targets read the depth arm beside the width arms but draw nothing without a
    width arm: a config of the depth arm alone (config/fixes_collapse.yaml) neither builds
    them (in a job, they failed on the missing widths) nor is named as one that can."""
    from depthlab.studies import BY_NAME

    shipped = shipped_configs(ROOT)
    config = config_of(ROOT, "config/fixes_collapse.yaml")
    built = {t.name for t in Catalogue(config, check_config(config, SCHEMA, STUDIES), TARGETS,
                                       []).targets}
    assert "fig_fixes_omega" in built and not built & {"fig_fixes_width", "table_fixes_width"}
    for name in ("fig_fixes_width", "table_fixes_width"):
        assert BY_NAME[name].unavailable({"fixes": ["depth"]}, shipped) == (
            f"{name}: this config has no arm width_* of study 'fixes'; run it with "
            "--configfile config/fixes.yaml or config/tiny_fixes.yaml")
        assert BY_NAME[name].unavailable({"fixes": ["depth", "width_64"]}, shipped) == ""


def test_a_table_at_a_depth_no_cell_has_is_not_built_and_asking_for_it_is_one_line():
    """The fixes probes table at L = 192 of a depth arm without L = 192 was empty, and its
    LaTeX failed inside the job; it is not planned, and asked for it is one line."""
    from depthlab.studies import BY_NAME

    config = config_of(ROOT, "config/tiny_fixes.yaml")
    config["studies"]["fixes"]["arms"]["depth"]["axes"]["depth"] = [2, 8, 96]
    catalogue = Catalogue(config, check_config(config, SCHEMA, STUDIES), TARGETS, [])
    built = {t.name for t in catalogue.targets}
    assert "table_fixes_probes_L96" in built and "table_fixes_probes_L192" not in built
    asked = BY_NAME["table_fixes_probes_L192"]
    assert unavailable_target(["results/tables/fixes_probes_L192.tex"], [asked],
                              catalogue.arms, shipped_configs(ROOT), catalogue.grid) == (
        "table_fixes_probes_L192: the arms it reads (depth, calibrated) have no cell at "
        "depth=192 (depth: 2, 8, 96)")
    # ResiDual's second stream, drawn by fig_fixes_carry, where ResiDual is measured only
    for name, carries in (("fixes_collapse", True), ("models_collapse", False)):
        config = config_of(ROOT, f"config/{name}.yaml")
        catalogue = Catalogue(config, check_config(config, SCHEMA, STUDIES), TARGETS, [])
        assert ("fig_fixes_carry" in {t.name for t in catalogue.targets}) == carries, name


def test_a_target_this_config_cannot_build_is_found_by_name_or_file():
    from depthlab.studies import BY_NAME

    shipped = shipped_configs(ROOT)
    width = BY_NAME["fig_fixes_width"]
    for asked in (["all", "fig_fixes_width"], ["results/figures/fixes_width.pdf"]):
        assert unavailable_target(asked, [width], {"stack96": ["grad"]}, shipped) == \
            width.unavailable({"stack96": ["grad"]}, shipped)
    assert unavailable_target(["all", "results/figures/x.png"], [width], {}, shipped) == ""


def test_a_path_no_rule_makes_names_the_closest_file():
    outputs = ["results/figures/grad_ratio_by_depth.png", "results/claims.md"]
    made = lambda path: path in outputs or path.startswith("results/runs/")  # noqa: E731
    assert unknown_path(["results/figures/grad_ratio_by_dept.png"], outputs, made) == (
        "no rule makes 'results/figures/grad_ratio_by_dept.png' and there is no such file (did "
        "you mean 'results/figures/grad_ratio_by_depth.png'?); snakemake --list-target-rules "
        "lists the targets")
    assert unknown_path(["zz/yy.txt"], outputs, made).startswith("no rule makes 'zz/yy.txt' "
                                                                 "and there is no such file;")
    # rule names, files a rule makes (wildcards too) and files that exist are not its to judge
    for fine in (["all"], ["results/claims.md"], ["results/runs/a/b/c.parquet"], ["Snakefile"]):
        assert unknown_path(fine, outputs, made, exists=lambda p: p == "Snakefile") == ""


@pytest.mark.workflow
def test_snakemake_refuses_an_unbuildable_or_mistyped_target_in_one_line(workdir):
    """Under the tiny config (a named run), fig_fixes_width (by name or file) and a mistyped
    figure path are one line before any job; nothing is left in runs/ (nor in results/)."""
    width = ("target error: fig_fixes_width: this config has no arm width_* of study 'fixes'; "
             "run it with --configfile config/fixes.yaml or config/tiny_fixes.yaml")
    for args, line in [
        (["--cores", "1", "fig_fixes_width"], width),
        (["-n", "results/figures/fixes_width.png"], width),
        (["-n", "results/figures/grad_ratio_by_dept.png"],
         "target error: no rule makes 'results/figures/grad_ratio_by_dept.png' and there is no "
         "such file (did you mean 'results/figures/grad_ratio_by_depth.png'?); snakemake "
         "--list-target-rules lists the targets"),
    ]:
        run = run_snakemake(workdir, "--configfile=config/tiny.yaml", *args, check=False)
        output = run.stdout + run.stderr
        assert run.returncode == 1, output
        assert [x for x in output.splitlines() if "error" in x.lower()] == [line], output
        assert "Traceback" not in output and "Job stats" not in output, output
        assert not (workdir / "runs").exists() and not (workdir / "logs").exists()


def _tiny_with(edit) -> dict:
    """config/tiny.yaml merged onto the defaults, as a run of it parses, then edited."""
    config = config_of(ROOT, "config/tiny.yaml",
                       defaults=yaml.safe_load((ROOT / "config/config.yaml").read_text()))
    edit(config)
    return config


def test_a_misspelt_arm_is_named_with_the_arm_it_meant():
    """An arm typo (`gard:` for `grad:`) merges onto config/config.yaml beside the arm it meant;
    nothing reads it, so it is one line naming it and the closest arm that is read."""
    config = _tiny_with(lambda c: c["studies"]["stack96"]["arms"].update(
        gard={"settings": {"seeds": 3}}))
    with pytest.raises(ConfigError, match=r"^studies\.stack96\.arms\.gard: no table, figure or "
                                          r"claim reads this arm \(did you mean 'grad'\?\)$"):
        reject_misspelt_arms(config, TARGETS, load_claims(ROOT / "config/claims.yaml"))


def test_an_analysis_depth_off_the_grid_is_one_line():
    """stack96's single_depth must be a depth of the arm its table reads (else it is empty)."""
    config = _tiny_with(lambda c: c["studies"]["stack96"]["analysis"].update(single_depth=5))
    jobs = check_config(config, SCHEMA, STUDIES)
    depths = sorted({c.settings.depth for j in jobs if j.arm == "grad" for c in j.cells})
    assert 5 not in depths
    with pytest.raises(ConfigError, match=r"^studies\.stack96\.analysis\.single_depth=5 is not a "
                                          r"depth of the arms table_twenty_layers reads \(grad: "
                                          + ", ".join(map(str, depths)) + r"\)$"):
        reject_off_grid_options(config, jobs, TARGETS)
    config["studies"]["stack96"]["analysis"]["single_depth"] = depths[0]
    reject_off_grid_options(config, jobs, TARGETS)  # on the grid: no error
