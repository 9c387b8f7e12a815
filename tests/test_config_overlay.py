"""A config as what it changes: files and --config values merged key by key onto
config/config.yaml, a null removing a key; the shipped configs are such overlays."""

from __future__ import annotations

import copy
import re

import pytest
import yaml
from conftest import ROOT, copy_workflow, run_snakemake

from depthlab.planner.grid import study_jobs
from depthlab.planner.overlay import (
    capped,
    combined,
    config_of,
    overlay,
    overridden,
    read_config,
    read_config_words,
    typed,
    with_base,
)
from depthlab.planner.validate import check_config
from depthlab.studies import STUDIES
from depthlab.vocabulary.settings import ConfigError
from depthlab.vocabulary.train_settings import arm_training

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
DEFAULT = yaml.safe_load((ROOT / "config/config.yaml").read_text())


def test_overlay_merges_mappings_replaces_the_rest_and_null_removes():
    base = {"a": {"x": 1, "y": [1, 2]}, "b": 2, "c": {"z": 3}}
    change = {"a": {"y": [3], "w": {"v": None, "u": 4}}, "b": None, "d": 5}
    assert overlay(base, change) == {"a": {"x": 1, "y": [3], "w": {"u": 4}},
                                     "c": {"z": 3}, "d": 5}
    assert base == {"a": {"x": 1, "y": [1, 2]}, "b": 2, "c": {"z": 3}}  # untouched
    assert overlay(base, {}) == base and overlay({}, base) == base
    assert overlay({"a": 1}, {"a": {"b": 2}}) == {"a": {"b": 2}}


def test_config_files_combine_as_snakemake_merges_them_keeping_nulls():
    first = {"a": {"x": 1, "y": 2}, "b": {"z": 3}}
    then = {"a": {"y": None}, "b": 4}
    assert combined(first, then) == {"a": {"x": 1, "y": None}, "b": 4}
    assert overlay({"a": {"y": 9, "q": 1}}, combined(first, then)) == {"a": {"x": 1, "q": 1},
                                                                      "b": 4}


def test_a_config_with_a_base_changes_that_file_s_config(tmp_path):
    (tmp_path / "mid.yaml").write_text("studies: {stack96: {settings: {seeds: 5, tokens: 9}}}\n")
    (tmp_path / "top.yaml").write_text(
        f"base: {tmp_path / 'mid.yaml'}\nstudies: {{stack96: {{settings: {{seeds: 2}}}}}}\n")
    config = config_of(ROOT, tmp_path / "top.yaml")
    assert "base" not in config
    settings = config["studies"]["stack96"]["settings"]
    assert (settings["seeds"], settings["tokens"]) == (2, 9)
    assert {k: v for k, v in config.items() if k != "studies"} == {
        k: v for k, v in DEFAULT.items() if k != "studies"}
    with pytest.raises(ValueError, match=r"^base='nope.yaml': no config file of that name$"):
        with_base({"base": "nope.yaml"}, ROOT, DEFAULT)
    (tmp_path / "loop.yaml").write_text(f"base: {tmp_path / 'loop.yaml'}\n")
    with pytest.raises(ValueError, match="a chain of bases that comes back to it"):
        config_of(ROOT, tmp_path / "loop.yaml")


def test_a_base_is_found_among_the_workflow_s_files_where_it_is_loaded_by_url(tmp_path,
                                                                             monkeypatch):
    """A workflow loaded by URL has no folder: its own files (config/tiny.yaml) come from
    Snakemake's source cache, which the Snakefile hands over as a callable."""
    monkeypatch.chdir(tmp_path)  # a host's folder: no config/tiny.yaml here
    cache = tmp_path / "cache"
    (cache / "config").mkdir(parents=True)
    (cache / "config/tiny.yaml").write_text((ROOT / "config/tiny.yaml").read_text())
    asked = []

    def source_path(name):
        asked.append(name)
        if not (cache / name).exists():
            raise OSError(f"404: {name}")  # what a URL that serves no such file gives
        return str(cache / name)

    config = with_base({"base": "config/tiny.yaml"}, source_path, DEFAULT)
    assert config == config_of(ROOT, "config/tiny.yaml")
    assert asked == ["config/tiny.yaml"]
    with pytest.raises(ValueError, match=r"^base='config/nope.yaml': no config file"):
        with_base({"base": "config/nope.yaml"}, source_path, DEFAULT)


@pytest.mark.parametrize("text, message", [
    ("studies:\n  stack96:\n    settings: {seeds: 3\n",
     r"^{base}:4: expected ',' or '\}}', but got '<stream end>' \(while parsing a flow "
     r"mapping at line 3\)$"),
    ("a: 1\n b: 2\n", r"^{base}:2: mapping values are not allowed here$"),
    ("- 1\n- 2\n", r"^{base}:1: a config file holds a mapping of keys, not a list$"),
], ids=["unclosed_brace", "bad_indent", "a_list"])
def test_a_base_yaml_cannot_read_is_one_line_naming_its_file_and_line(tmp_path, text, message):
    base = tmp_path / "broken.yaml"
    base.write_text(text)
    with pytest.raises(ValueError, match=message.format(base=re.escape(str(base)))):
        with_base({"base": str(base)}, ROOT, DEFAULT)


@pytest.mark.workflow
def test_snakemake_says_which_base_file_and_line_yaml_cannot_read(tmp_path):
    work = copy_workflow(tmp_path)
    (work / "broken.yaml").write_text("studies:\n  stack96:\n    settings: {seeds: 3\n")
    (work / "mine.yaml").write_text("base: broken.yaml\n")
    run = run_snakemake(work, "-n", "--configfile", "mine.yaml", check=False)
    output = run.stdout + run.stderr
    assert run.returncode == 1 and "Traceback" not in output, output
    errors = [line for line in output.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and errors[0].startswith(
        "config error: broken.yaml:4: expected ',' or '}', but got '<stream end>'"), output
    assert not (work / "results").exists() and not (work / "logs").exists()


def test_command_line_scalars_are_read_as_yaml():
    # what Snakemake's parser gives for --config 'studies={stack96: {settings: {seeds: 5}}}'
    given = {"studies": {"stack96": {"settings": {"seeds": "5", "out_scale": "1.5",
                                                  "causal": "true", "placement": "pre",
                                                  "block": "my_blocks:make"}}},
             "x": ["6", "null"]}
    assert typed(given) == {"studies": {"stack96": {"settings": {
        "seeds": 5, "out_scale": 1.5, "causal": True, "placement": "pre",
        "block": "my_blocks:make"}}}, "x": [6, None]}


def test_command_line_words_keep_the_types_they_were_typed_with():
    # Snakemake's reading turns both seeds: 5 and seeds: "5" into '5'; the words do not
    words = ['studies={stack96: {settings: {seeds: "5"}}}', "studies={varsplit: {arms: "
             "{tokens: null}}}", "threads=2", "corpus_path=data/my corpus.txt", "empty="]
    assert read_config_words(words) == {
        "studies": {"stack96": {"settings": {"seeds": "5"}},
                    "varsplit": {"arms": {"tokens": None}}},
        "threads": 2, "corpus_path": "data/my corpus.txt", "empty": None}
    assert read_config_words(["studies={stack96: {settings: {seeds: 5}}}"])["studies"] == {
        "stack96": {"settings": {"seeds": 5}}}
    assert read_config_words(["x={a: [1"]) == {"x": "{a: [1"}  # no YAML: the words as typed


def test_a_file_holding_one_setting_is_the_default_config_with_that_setting(tmp_path):
    (tmp_path / "my.yaml").write_text("studies: {stack96: {settings: {seeds: 5}}}\n")
    config = config_of(ROOT, tmp_path / "my.yaml")
    assert config["studies"]["stack96"]["settings"]["seeds"] == 5
    config["studies"]["stack96"]["settings"]["seeds"] = DEFAULT["studies"]["stack96"][
        "settings"]["seeds"]
    assert config == DEFAULT
    jobs = check_config(config_of(ROOT, tmp_path / "my.yaml"), SCHEMA, STUDIES)
    assert len(jobs) == len(study_jobs(DEFAULT))


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "config").glob("*.yaml")
                                        if p.name not in ("claims.yaml", "frozen.yaml")))
@pytest.mark.slow
def test_every_shipped_config_merged_onto_the_defaults_is_valid(name):
    config = config_of(ROOT, f"config/{name}")
    # the GPU configs name device cuda: checked here as on a cluster's login node
    assert check_config({**config, "check_device": False}, SCHEMA, STUDIES)


def test_the_tiny_config_shrinks_the_default_and_the_fixes_config_replaces_its_studies():
    tiny, fixes = config_of(ROOT, "config/tiny.yaml"), config_of(ROOT, "config/fixes.yaml")
    assert set(tiny["studies"]) == set(DEFAULT["studies"])
    for study, spec in tiny["studies"].items():
        assert set(spec["arms"]) <= set(DEFAULT["studies"][study]["arms"]) | {"nofinalnorm"}
    # the work of a run's cells: blocks x width x tokens x seeds
    work = lambda c: sum(x.settings.depth * x.settings.d_model * x.settings.tokens  # noqa: E731
                         * x.settings.seeds for j in study_jobs(c) for x in j.cells)
    assert 0 < work(tiny) < work(DEFAULT) / 1000
    assert set(fixes["studies"]) == {"fixes", "fixestraining"}
    # the overlay holds only what shrinks: far shorter than the config it changes
    assert len((ROOT / "config/tiny.yaml").read_text().splitlines()) < 110


@pytest.mark.parametrize("study", sorted(DEFAULT["studies"]))
def test_a_default_study_the_tiny_config_does_not_name_runs_there_within_its_sizes(study):
    """config/tiny.yaml's `at_most`: a study of the defaults that tiny.yaml does not name (a
    copy of each default study under a new name) runs in the tiny run with every cell and its
    training within those sizes, an axis's values lowered (depth [6, 24, 96] at most 8: [6,
    8]), and passes every check; the studies tiny.yaml names are as it gives them."""
    added = overlay(DEFAULT, {"studies": {"new": copy.deepcopy(DEFAULT["studies"][study])}})
    tiny = config_of(ROOT, "config/tiny.yaml", defaults=added)
    sizes = tiny["at_most"]
    assert sizes["depth"] == 8 and sizes["seeds"] == 4  # the bounds the asserts below read
    jobs = [j for j in check_config(copy.deepcopy(tiny), SCHEMA) if j.study == "new"]
    cells = [c.settings for j in jobs for c in j.cells]
    assert cells and max(s.depth for s in cells) == 8
    full = [c.settings for j in study_jobs(added) if j.study == "new" for c in j.cells]
    size = lambda settings: sum(s.depth * s.d_model * s.tokens * s.seeds for s in settings)  # noqa: E731
    assert max(s.depth for s in full) > 8 and size(cells) < size(full) / 10
    for s in cells:
        assert s.d_model <= 32 and s.tokens <= 16 and s.seeds <= 4, s
    for arm in tiny["studies"]["new"]["arms"] if "training" in DEFAULT["studies"][study] else ():
        training = arm_training(tiny, "new", arm)
        assert training.steps <= 12 and max(training.checkpoints) <= 12, (arm, training)
    without = config_of(ROOT, "config/tiny.yaml")
    assert without["studies"] == {k: v for k, v in tiny["studies"].items() if k != "new"}


def test_a_size_bound_that_is_no_size_setting_is_one_line():
    config = {**config_of(ROOT, "config/tiny.yaml"), "at_most": {"depht": 8}}
    with pytest.raises(ConfigError, match=r"^at_most\.depht: no size setting of that name; "
                                          r".*did you mean 'depth'"):
        check_config(config, SCHEMA, STUDIES)
    assert capped({"studies": {"s": {"settings": {"depth": 8}, "arms": {"a": {
        "axes": {"depth": [2, 6, 4, 96]}, "settings": {"depth": 3}}}}}}, {"depth": 4}) == \
        {"studies": {"s": {"settings": {"depth": 4}, "arms": {"a": {
            "axes": {"depth": [2, 4]}, "settings": {"depth": 3}}}}}}


def test_the_sizes_bound_what_a_config_is_merged_onto_never_what_it_gives():
    """A value given beside `at_most` (in tiny.yaml, or typed on the command line with it) is
    as given, above the bound too; what the defaults give is lowered."""
    words = read_config_words(["studies={stack96: {settings: {seeds: 7}}, monitor: "
                               "{arms: {blocks: {axes: {depth: [2, 16]}}}}}"])
    given = combined(read_config(ROOT / "config/tiny.yaml"), words)
    config = with_base(given, ROOT, DEFAULT)
    assert config["studies"]["stack96"]["settings"]["seeds"] == 7
    assert config["studies"]["monitor"]["arms"]["blocks"]["axes"]["depth"] == [2, 16]
    assert DEFAULT["studies"]["varsplit"]["arms"]["tokens"]["axes"]["tokens"][-1] > 16
    bounded = with_base({"at_most": {"tokens": 16}}, ROOT, DEFAULT)
    assert bounded["studies"]["varsplit"]["arms"]["tokens"]["axes"]["tokens"][-1] == 16


@pytest.mark.parametrize("name", ["fixes", "scale", "training_gpu", "models", "tiny_fixes",
                                  "fixes_gpu", "rezero_deep", "deepnet_update", "confirm",
                                  "confirm_fixes", "fixes_recipes", "confirm_fixes_recipes",
                                  "rezero_speed"])
def test_a_study_added_to_the_defaults_runs_in_no_named_run_that_does_not_list_it(name):
    """A named run that runs other studies lists them (`only_studies`): a new study of
    config/config.yaml (its package and its entry there) is not part of it, with no line in
    its config; in the default run it is."""
    added = overlay(DEFAULT, {"studies": {"cosine": copy.deepcopy(DEFAULT["studies"]["monitor"])}})
    assert "cosine" in config_of(ROOT, defaults=added)["studies"]
    run = config_of(ROOT, f"config/{name}.yaml", defaults=added)
    assert "cosine" not in run["studies"] and run["studies"]
    assert set(run["studies"]) == set(config_of(ROOT, f"config/{name}.yaml")["studies"])


def test_only_studies_of_a_base_is_a_list_a_file_replaces_and_a_typo_is_one_line(tmp_path):
    (tmp_path / "both.yaml").write_text("base: config/fixes.yaml\nonly_studies: [fixes]\n")
    assert list(config_of(ROOT, tmp_path / "both.yaml")["studies"]) == ["fixes"]
    typo = {**config_of(ROOT, "config/fixes.yaml"), "only_studies": ["fixes", "fixestrainig"]}
    with pytest.raises(ConfigError, match=r"^only_studies: 'fixestrainig' is no study "
                                          r"package's name; .*did you mean 'fixestraining'"):
        check_config(typo, SCHEMA, STUDIES)


@pytest.mark.workflow
def test_snakemake_runs_a_one_setting_file_and_a_typed_command_line_value(tmp_path):
    work = copy_workflow(tmp_path)
    (work / "my.yaml").write_text("studies: {stack96: {settings: {seeds: 5}}}\n")
    stats = re.compile(r"^total\s+(\d+)$", re.M)
    default = run_snakemake(work, "-n", "fig_grad_ratio_by_depth").stdout
    mine = run_snakemake(work, "-n", "fig_grad_ratio_by_depth", "--configfile", "my.yaml")
    assert stats.search(mine.stdout)[1] == stats.search(default)[1]
    typed_run = run_snakemake(work, "-n", "fig_grad_ratio_by_depth", "--config",
                              "studies={stack96: {settings: {seeds: 5}}}", check=False)
    assert typed_run.returncode == 0, typed_run.stderr
    wrong = run_snakemake(work, "-n", "--config", "studies={stack96: {settings: {seeds: x}}}",
                          check=False)
    assert wrong.returncode == 1 and "studies.stack96" in wrong.stdout + wrong.stderr
    # a number typed as a string is the string, one line before any job
    quoted = run_snakemake(work, "-n", "--config",
                           'studies={stack96: {settings: {seeds: "5"}}}', check=False)
    assert quoted.returncode == 1, quoted.stdout
    assert ("config error: --config: studies.stack96.settings.seeds='5' must be an integer"
            in quoted.stdout + quoted.stderr)
    # a base that names no file: one line naming it, before any job
    (work / "based.yaml").write_text("base: config/nope.yaml\n")
    based = run_snakemake(work, "-n", "--configfile", "based.yaml", check=False)
    output = based.stdout + based.stderr
    assert based.returncode == 1 and "Traceback" not in output
    assert [line for line in output.splitlines() if "error" in line.lower()] == [
        "config error: based.yaml:1: base='config/nope.yaml': no config file of that name"]


def seeds_by_arm(config: dict, study: str) -> dict[str, set]:
    """The seed counts of each arm's cells of `study` in `config` (its measure jobs)."""
    out: dict[str, set] = {}
    for job in study_jobs(config):
        if job.study == study:
            out.setdefault(job.arm, set()).update(c.settings.seeds for c in job.cells)
    return out


def test_a_study_setting_reaches_the_arms_without_their_own_and_a_warning_names_the_rest():
    given = {"studies": {"stack96": {"settings": {"seeds": 5}}}}
    base = copy.deepcopy(DEFAULT)  # two arms with seeds of their own, as a user's base may set
    for arm in ("grad", "sens_loss"):
        base["studies"]["stack96"]["arms"][arm].setdefault("settings", {})["seeds"] = 36
    config = with_base(given, ROOT, base)
    seeds = seeds_by_arm(config, "stack96")
    own = {arm for arm, counts in seeds.items() if counts != {5}}
    assert own and own != set(seeds), seeds  # some arms keep their own, the others take 5
    assert all(seeds[arm] == {36} for arm in own)
    [line] = overridden(given, config)
    assert line.startswith("studies.stack96.settings.seeds=5 does not reach arms ")
    named = set(re.findall(r"(\w+) \(36\)", line))
    assert named == own, (named, own)
    # an arm the given config sets itself is what it asked for: no warning
    mine = {"studies": {"stack96": {"settings": {"seeds": 5}, "arms": {
        arm: {"settings": {"seeds": 5}} for arm in own}}}}
    config = with_base(mine, ROOT, base)
    assert overridden(mine, config) == []
    assert set().union(*seeds_by_arm(config, "stack96").values()) == {5}


def test_a_study_setting_every_arm_varies_on_its_axes_is_a_warning():
    given = {"studies": {"stack96": {"settings": {"depth": 5, "d_model": 64}}}}
    config = with_base(given, ROOT, DEFAULT)
    [line] = overridden(given, config)
    arms = list(DEFAULT["studies"]["stack96"]["arms"])
    assert line == (f"studies.stack96.settings.depth=5 is read by no cell: every arm varies depth "
                    f"on its axes ({', '.join(arms)})")
    assert {c.settings.d_model for j in study_jobs(config) if j.study == "stack96"
            for c in j.cells} == {64}


def test_a_training_setting_an_arm_overrides_is_a_warning_too():
    given = {"studies": {"training": {"training": {"warmup_steps": 7}}}}
    [line] = overridden(given, with_base(given, ROOT, DEFAULT))
    assert line.startswith("studies.training.training.warmup_steps=7 does not reach arms ")
    assert "warmup (30)" in line and "nowarmup (0)" in line


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "config").glob("*.yaml")
                                        if p.name not in ("claims.yaml", "config.yaml")))
def test_no_shipped_config_sets_a_study_setting_its_arms_override(name):
    given = yaml.safe_load((ROOT / "config" / name).read_text())
    assert overridden({k: v for k, v in given.items() if k != "base"},
                      config_of(ROOT, f"config/{name}")) == []


def test_the_readme_config_example_does_what_the_readme_says():
    readme = (ROOT / "README.md").read_text()
    example = readme.split("For example, `my.yaml`:\n\n```yaml\n", 1)[1].split("```", 1)[0]
    given = yaml.safe_load(example)
    study, settings = next(iter(given["studies"].items()))
    value = settings["settings"]["seeds"]
    config = with_base(given, ROOT, DEFAULT)
    said = re.search(r"runs the default study with (\d+) seeds in\s+every arm of (\w+) \(the "
                     r"default pool is (\d+)\)", readme)
    assert said, "README: the example's sentence changed; keep this test in step"
    assert (int(said[1]), said[2]) == (value, study)
    assert set().union(*seeds_by_arm(DEFAULT, study).values()) == {int(said[3])}
    seeds = seeds_by_arm(config, study)
    assert len(seeds) == len(DEFAULT["studies"][study]["arms"]) > 1
    assert all(counts == {value} for counts in seeds.values()), seeds
    assert overridden(given, config) == []
