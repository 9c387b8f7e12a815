"""Training on Tiny Shakespeare: the corpus and its checksum, a short run, probes on saved
weights."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import SHIPPED_CORPUS, SMALL_CORPUS, copy_workflow, run_snakemake
from torch.utils.flop_counter import FlopCounterMode

from depthlab.core.adamw import AdamW
from depthlab.core.corpus import CorpusError, fetch_corpus, read_corpus, split, unigram_entropy
from depthlab.core.model import StackParams
from depthlab.core.probes import pass_rows
from depthlab.core.train import (
    CharModel,
    ablation_rows,
    build_model,
    fixed_batches,
    load_weights,
    model_loss,
    probe_model,
    save_weights,
    train_cell,
    update_rows,
    validation_loss,
    windows,
)
from depthlab.planner import cost
from depthlab.vocabulary.corpus import CORPUS_SHA256
from depthlab.vocabulary.settings import ConfigError, RunSettings
from depthlab.vocabulary.train_settings import TrainSettings, training_arms


@pytest.fixture(scope="module")
def corpus(corpus_file):
    ids, vocab = read_corpus(corpus_file)
    return ids, vocab


def tiny(**kw) -> RunSettings:
    base = {"placement": "pre", "depth": 2, "d_model": 16, "heads": 2, "dtype": "float32",
            "batch": 4, "tokens": 16, "loss": "cross_entropy", "head_classes": 65, "seeds": 2}
    return RunSettings(**{**base, **kw})


def test_corpus_checksum_mismatch_fails_and_leaves_nothing(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("To be, or not to be\n")
    dest = tmp_path / "resources" / "tinyshakespeare.txt"
    with pytest.raises(CorpusError, match="sha256 mismatch"):
        fetch_corpus(dest, bad, CORPUS_SHA256)
    assert not dest.exists()
    with pytest.raises(CorpusError, match="is not a file"):
        fetch_corpus(dest, tmp_path / "missing.txt", CORPUS_SHA256)


def test_another_corpus_is_taken_with_its_own_checksum(tmp_path):
    sha = hashlib.sha256(SMALL_CORPUS.read_bytes()).hexdigest()
    dest = tmp_path / "corpus.txt"
    fetch_corpus(dest, SMALL_CORPUS, sha)
    assert dest.read_bytes() == SMALL_CORPUS.read_bytes()
    ids, vocab = read_corpus(dest)
    assert "".join(vocab[i] for i in ids) == SMALL_CORPUS.read_text()
    url = SMALL_CORPUS.resolve().as_uri()  # a URL is downloaded the same way
    fetch_corpus(tmp_path / "from_url.txt", url, sha)
    assert (tmp_path / "from_url.txt").read_bytes() == SMALL_CORPUS.read_bytes()


def test_shipped_corpus_decompresses_to_tiny_shakespeare(corpus_file, corpus):
    assert corpus_file.stat().st_size == 1_115_394
    assert hashlib.sha256(corpus_file.read_bytes()).hexdigest() == CORPUS_SHA256
    assert SHIPPED_CORPUS.stat().st_size < 400_000  # xz: a third of the text
    ids, vocab = corpus
    assert len(vocab) == 65 and len(ids) == 1_115_394
    assert "".join(vocab[i] for i in ids[:10]) == corpus_file.read_text()[:10]
    train, val = split(ids, 0.1)
    assert len(val) == pytest.approx(0.1 * len(ids), abs=1)
    # a uniform distribution over 65 characters would give ln 65 = 4.17 nats
    assert 3.0 < unigram_entropy(ids) < np.log(65)


@pytest.mark.workflow
def test_corpus_rule_rejects_a_wrong_file(tmp_path):
    workdir = copy_workflow(tmp_path)
    bad = tmp_path / "bad.txt"
    bad.write_text("not shakespeare")
    # the target first: --configfile and --config take every following word
    out = run_snakemake(workdir, "resources/tinyshakespeare.txt", "--cores", "1",
                        "--configfile", "config/tiny.yaml", "--config", f"corpus_path={bad}",
                        check=False)
    assert out.returncode != 0
    assert "sha256 mismatch" in out.stdout + out.stderr
    assert not (workdir / "resources" / "tinyshakespeare.txt").exists()


@pytest.mark.parametrize("placement", ["pre", "post"])
def test_step_flops_count_what_torch_counts(placement):
    """cost.step_flops (the benchmark's training FLOPs) agrees exactly with PyTorch's own FLOP
    counter on a training model's forward and backward, once the two attention products are
    set apart (FlopCounterMode does not count the CPU attention kernel; they are 4 T^2 d per
    block and sequence, 3x with backward)."""
    s = RunSettings(placement=placement, depth=3, d_model=32, heads=2, batch=3, tokens=16,
                    seeds=2, loss="cross_entropy", head_classes=11, dtype="float32")
    model = build_model(s, s.seed_list())
    ids = torch.randint(0, s.head_classes, (s.seeds, s.batch, s.tokens + 1))
    with FlopCounterMode(display=False) as counter:
        loss, _ = model_loss(model, ids, s)
        loss.sum().backward()
    attention = 3 * s.seeds * s.batch * s.depth * 4 * s.tokens**2 * s.d_model
    assert counter.get_total_flops() == cost.step_flops(s) - attention


@pytest.mark.parametrize("placement", ["pre", "normformer", "resi_dual"])
def test_a_training_step_s_forward_skips_the_probes_reductions_with_the_same_numbers(placement):
    """A training step's or a validation loss's forward (probed=False) records no per-block sd
    nor active fraction, which only the probes read, and gives the same losses and gradients,
    bit for bit, as the probed forward."""
    s = tiny(placement=placement, depth=3)
    ids = torch.randint(0, s.head_classes, (s.seeds, s.batch, s.tokens + 1),
                        generator=torch.Generator().manual_seed(0))
    runs = {}
    for probed in (True, False):
        model = build_model(s, s.seed_list())
        loss, trace = model_loss(model, ids, s, probed=probed)
        loss.sum().backward()
        runs[probed] = (loss.detach(), [t.grad for t in model.leaves()], trace)
    assert torch.equal(runs[True][0], runs[False][0])
    assert all(torch.equal(a, b) for a, b in zip(runs[True][1], runs[False][1], strict=True))
    probed, bare = runs[True][2], runs[False][2]
    assert len(probed.attn_in_sd) == len(probed.mlp_in_sd) == len(probed.ffn_active) == 3
    assert bare.attn_in_sd == bare.mlp_in_sd == bare.ffn_active == []
    assert len(bare.stream) == len(probed.stream) == 4


def test_train_settings_are_checked():
    with pytest.raises(ConfigError, match="checkpoints"):
        TrainSettings.from_mapping({"steps": 10, "checkpoints": [0, 20]})
    with pytest.raises(ConfigError, match="warmup_steps"):
        TrainSettings.from_mapping({"steps": 10, "warmup_steps": 11})
    with pytest.raises(ConfigError, match="unknown key 'step'"):
        TrainSettings.from_mapping({"step": 10})
    config = {"studies": {"t": {"settings": {"loss": "mse"}, "training": {},
                                "arms": {"a": {"axes": {"depth": [2]}}}}}}
    from depthlab.planner.grid import study_jobs
    with pytest.raises(ConfigError, match="cross_entropy"):
        training_arms(config, study_jobs(config))


# a bad value of every training key, beside the bound it breaks (one each side of a bounded
# number's interval, a value of another type), and the values at its bounds that are good
BAD_TRAINING = [
    ("steps", 0), ("steps", 2.5), ("steps", True), ("lr", 0), ("lr", -1e-3), ("lr", "1e-3"),
    ("lr", float("nan")), ("warmup_steps", -1), ("warmup_steps", 301), ("schedule", "linear"),
    ("min_lr_ratio", -0.1), ("min_lr_ratio", 1.5), ("weight_decay", -0.1),
    ("weight_decay", float("inf")), ("beta1", -0.1), ("beta1", 1), ("beta2", 2),
    ("beta2", False), ("beta2", 1.0), ("eps", 0), ("eps", 1.5), ("val_fraction", 0),
    ("val_fraction", 1),
    ("eval_every", 0), ("eval_batches", 0), ("probe_batch", -4), ("checkpoints", []),
    ("checkpoints", [1, 10]), ("checkpoints", [0, 30, 10]), ("checkpoints", [0, 301]),
    ("checkpoints", [0, 2.5]), ("checkpoints", 5), ("autocast", "float16"), ("autocast", False),
    ("update_steps", 0), ("update_steps", 301), ("update_steps", 2.5),
]
GOOD_TRAINING = [
    ("min_lr_ratio", 0), ("min_lr_ratio", 1), ("weight_decay", 0), ("beta1", 0), ("beta1", 0.999),
    ("beta2", 0.9999), ("eps", 1), ("val_fraction", 0.999), ("lr", 5), ("warmup_steps", 300),
    ("checkpoints", [0]), ("checkpoints", [0, 300]), ("autocast", "bfloat16"),
    ("update_steps", 300),
]


@pytest.mark.parametrize(("key", "value"), BAD_TRAINING)
def test_a_bad_training_value_is_one_line_naming_it(key, value):
    """Each training key's bound and choices (declared in its field: train_setting) reject a
    value outside them, as one line that names the key and the value; the values at the
    bounds pass (BAD_TRAINING covers every key)."""
    where = "studies.t.arms.a.training"
    with pytest.raises(ConfigError) as raised:
        TrainSettings.from_mapping({key: value}, where)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{where}: {key}={value!r} "), message


def test_the_bad_training_values_cover_every_key_and_spare_the_bounds():
    assert {key for key, _ in BAD_TRAINING} == {f.name for f in dataclasses.fields(TrainSettings)}
    for key, value in GOOD_TRAINING:
        assert getattr(TrainSettings.from_mapping({key: value}), key) == (
            tuple(value) if isinstance(value, list) else value)


def test_schedule_warms_up_then_decays():
    ts = TrainSettings(steps=100, warmup_steps=10, min_lr_ratio=0.1)
    factors = [ts.lr_factor(k) for k in range(100)]
    assert factors[0] == pytest.approx(1 / 11)
    assert np.all(np.diff(factors[:11]) > 0) and factors[10] == 1
    assert np.all(np.diff(factors[10:]) < 0) and factors[-1] == pytest.approx(0.1)
    assert TrainSettings(steps=5, schedule="constant").lr_factor(0) == 1


def test_adamw_is_torch_s_adamw_under_its_lambda_schedule_bit_for_bit():
    """depthlab's AdamW at lr·lr_factor(step) against torch.optim.AdamW (its default on the
    CPU) under LambdaLR(lr_factor): two groups (one decaying), a parameter without a gradient
    on alternate steps, 12 steps through a warmup: every parameter equal bit for bit."""
    ts = TrainSettings(steps=12, warmup_steps=4, schedule="cosine", lr=3e-3, weight_decay=0.1,
                       beta1=0.8, beta2=0.95, eps=1e-7)
    gen = torch.Generator().manual_seed(0)
    start = [torch.randn(3, 5, 4, generator=gen, dtype=torch.float64),
             torch.randn(3, 4, generator=gen), torch.randn(3, 2, 2, generator=gen)]
    ours, theirs = ([t.clone().requires_grad_() for t in start] for _ in range(2))
    mine = AdamW([(ours[:1], ts.weight_decay), (ours[1:], 0.0)], (ts.beta1, ts.beta2), ts.eps)
    opt = torch.optim.AdamW([{"params": theirs[:1], "weight_decay": ts.weight_decay},
                             {"params": theirs[1:], "weight_decay": 0.0}], lr=ts.lr,
                            betas=(ts.beta1, ts.beta2), eps=ts.eps)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, ts.lr_factor)
    for step in range(ts.steps):
        mine.zero_grad()
        opt.zero_grad(set_to_none=True)
        for params in (ours, theirs):
            used = params if step % 2 else params[:2]  # the third gets no gradient every other step
            sum((p.sin() * (step + 1)).sum() for p in used).backward()
        mine.step(ts.lr * ts.lr_factor(step))
        opt.step()
        schedule.step()
    for a, b in zip(ours, theirs, strict=True):
        assert torch.equal(a, b)
    assert not torch.equal(ours[2], start[2])


@pytest.mark.parametrize("placement", ["pre", "post"])
def test_five_steps_lower_the_training_loss(corpus, placement):
    ids, _ = corpus
    s = tiny(placement=placement)
    ts = TrainSettings(steps=5, lr=1e-2, checkpoints=(0,), eval_every=5, eval_batches=1)
    result = train_cell(s, ts, ids)
    train_ids, _ = split(ids, ts.val_fraction)
    batch = windows(torch.as_tensor(train_ids), np.arange(0, 64 * 17, 17).reshape(2, 32), 17)
    with torch.no_grad():
        before = model_loss(build_model(s, s.seed_list()), batch, s)[0]
        after = model_loss(result.model, batch, s)[0]
    assert (after < before - 0.1).all(), (before, after)
    frame = result.frame
    assert set(frame["step"]) == {0, 1, 2, 3, 4, 5}
    assert frame["value"].notna().all()
    # the first update moved the output, by a small fraction of its size
    update = frame.loc[frame["metric"] == "relative_update", ["step", "value"]]
    assert len(update) == s.seeds and (update["step"] == 1).all()
    assert ((update["value"] > 0) & (update["value"] < 1)).all()


def test_relative_update_is_the_relative_change_of_the_output():
    before = torch.randn(2, 6, 4, dtype=torch.float64)
    after = before.clone()
    after[1] *= 1.25
    later = -before
    rows = update_rows([before, after, later], [3, 4])
    assert rows["seed"].tolist() == [3, 4, 3, 4] and rows["step"].tolist() == [1, 1, 2, 2]
    # each step's change is from initialisation, not from the step before: -F - F = -2F
    np.testing.assert_allclose(rows["value"], [0.0, 0.25, 2.0, 2.0], rtol=1e-12)


def test_recording_more_update_steps_leaves_training_and_the_first_step_alone(corpus):
    ids, _ = corpus
    s = tiny(placement="post", depth=2)
    settings = {"steps": 4, "lr": 1e-2, "checkpoints": (0,), "eval_every": 4, "eval_batches": 1}
    one = train_cell(s, TrainSettings(**settings), ids).frame
    three = train_cell(s, TrainSettings(**settings, update_steps=3), ids).frame
    update = three[three["metric"] == "relative_update"]
    assert sorted(set(update["step"])) == [1, 2, 3] and len(update) == 3 * s.seeds
    assert (update["value"] > 0).all()
    first = one[one["metric"] == "relative_update"]
    assert first["value"].tolist() == update.loc[update["step"] == 1, "value"].tolist()
    rest = ["seed", "step", "layer", "sublayer", "metric", "value"]
    pd.testing.assert_frame_equal(
        one[one["metric"] != "relative_update"][rest].reset_index(drop=True),
        three[three["metric"] != "relative_update"][rest].reset_index(drop=True))


def test_probes_on_a_checkpoint_equal_probes_on_the_loaded_weights(tmp_path, corpus):
    ids, _ = corpus
    s = tiny(placement="post", depth=3)
    ts = TrainSettings(steps=5, lr=1e-2, checkpoints=(0, 5), eval_every=5, eval_batches=1)
    result = train_cell(s, ts, ids)
    save_weights([result.model], [s.seed_list()], tmp_path / "w.pt")
    (loaded,) = load_weights(tmp_path / "w.pt")
    _, val = split(ids, ts.val_fraction)
    _, probe_ids = fixed_batches(torch.as_tensor(val), s, ts)
    probes, loss = probe_model(loaded, probe_ids, s)
    fresh = pass_rows(probes, s.seed_list(), loss)
    logged = result.frame[result.frame["step"] == 5].merge(
        fresh, on=["seed", "layer", "sublayer", "metric"], suffixes=("", "_fresh"))
    assert len(logged) == len(fresh) > 0
    assert {"grad_norm", "grad_ratio", "stream_sd", "token_corr", "loss"} <= set(logged["metric"])
    np.testing.assert_allclose(logged["value"], logged["value_fresh"], rtol=1e-6, atol=1e-9)
    # probing leaves no gradient behind, so training resumes from the weights it had
    assert all(t.grad is None for t in loaded.leaves())


@pytest.mark.parametrize("placement", ["pre", "post", "lns", "resi_dual"])
def test_a_removed_block_is_the_identity_in_its_place(corpus, placement):
    """Block ablation: removing block l equals running the stack whose block l adds nothing
    where it can (Pre-LN family: its output weights and biases zeroed, bit for bit), and for
    every placement leaves every other block with its own index (the stack without block l,
    re-indexed, differs for LN-Scaling, whose branch scale is 1/sqrt(l))."""
    ids, _ = corpus
    s = tiny(placement=placement, depth=3)
    ts = TrainSettings(steps=1, checkpoints=(0,), eval_batches=2)
    _, val = split(ids, ts.val_fraction)
    val_data = torch.as_tensor(val)
    starts, _ = fixed_batches(val_data, s, ts)
    model = build_model(s, s.seed_list())
    ablated = validation_loss(model, val_data, starts, s, removed=2)
    full = validation_loss(model, val_data, starts, s)
    assert not torch.equal(ablated, full)
    if placement in ("pre", "lns"):
        silent = CharModel(model.embed, model.pos, StackParams(
            [{k: (v.detach() * 0 if i == 1 and k in ("wo", "bo", "w2", "b2") else v)
              for k, v in b.items()} for i, b in enumerate(model.stack.blocks)],
            model.stack.final))
        assert torch.equal(validation_loss(silent, val_data, starts, s), ablated)
    if placement == "lns":  # the two-block stack, re-indexed, is another model
        shorter = CharModel(model.embed, model.pos, StackParams(
            [model.stack.blocks[0], model.stack.blocks[2]], model.stack.final))
        other = validation_loss(shorter, val_data, starts, dataclasses.replace(s, depth=2))
        assert not torch.allclose(other, ablated)
    rows = ablation_rows(model, val_data, starts, s, step=1)
    assert sorted(rows["layer"].unique()) == [1, 2, 3] and len(rows) == 3 * s.seeds
    assert (rows["metric"] == "ablated_val_loss").all()
    at2 = rows[rows["layer"] == 2].sort_values("seed")["value"].to_numpy()
    np.testing.assert_array_equal(at2, ablated.numpy())


def test_batched_seeds_train_as_if_alone(corpus):
    """Summed per-seed losses and element-wise AdamW: seed 1 trained beside seed 0 equals seed 1
    trained alone (float64)."""
    ids, _ = corpus
    ts = TrainSettings(steps=3, lr=1e-2, checkpoints=(0,), eval_every=3, eval_batches=1)
    both = train_cell(tiny(dtype="float64"), ts, ids)
    alone = train_cell(tiny(dtype="float64", seeds=1, seed_offset=1), ts, ids)
    for a, b in zip(both.model.leaves(), alone.model.leaves(), strict=True):
        torch.testing.assert_close(a[1:], b, rtol=1e-9, atol=1e-12)
    key = ["metric", "step", "layer", "sublayer"]
    pair = both.frame[both.frame["seed"] == 1].merge(alone.frame, on=[*key, "seed"])
    assert len(pair) > 0
    np.testing.assert_allclose(pair["value_x"], pair["value_y"], rtol=1e-9)
    # and the two seeds really differ
    assert not torch.equal(both.model.embed[0], both.model.embed[1])


@pytest.mark.slow
def test_training_does_not_depend_on_the_thread_count(corpus):
    """The same cell trained on 1 and on 2 torch threads (float32, as the study trains) gives
    the same weights and probes bit for bit at sizes where torch splits its products over the
    threads: the config's `threads` changes speed only."""
    ids, _ = corpus
    ts = TrainSettings(steps=3, lr=1e-2, checkpoints=(0, 3), eval_every=3, eval_batches=1)
    before = torch.get_num_threads()
    runs = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            runs.append(train_cell(tiny(d_model=128, heads=4, tokens=64, batch=8), ts, ids))
    finally:
        torch.set_num_threads(before)
    one, two = runs
    for a, b in zip(one.model.leaves(), two.model.leaves(), strict=True):
        assert torch.equal(a, b)
    pd.testing.assert_frame_equal(one.frame, two.frame)


@pytest.mark.workflow
def test_training_study_of_the_tiny_run(tiny_run):
    table = pd.read_parquet(tiny_run / "results/tables/training.parquet")
    val = table[table["metric"] == "val_loss"]
    first = val[val["step"] == 0].groupby(["arm", "label", "seed"])["value"].first()
    last = val[val["step"] == val["step"].max()].groupby(["arm", "label", "seed"])["value"].first()
    assert (last < first).all()
    # the probes ran at every checkpoint, the warmup arms differ only in their schedule
    assert set(table.loc[table["metric"] == "grad_ratio", "step"]) == {0, 3, 10, 12}
    assert set(table["warmup_steps"]) == {0, 4}
    # the arm without the final norm, and block ablation at the last step (one row per block)
    assert set(table.loc[table["arm"] == "nofinalnorm", "final_norm"]) == {"off"}
    ablated = table[table["metric"] == "ablated_val_loss"]
    assert set(ablated["step"]) == {12}
    per_cell = ablated.groupby(["arm", "label", "seed"])["layer"].agg(["min", "max", "count"])
    assert (per_cell["min"] == 1).all() and (per_cell["count"] == per_cell["max"]).all()
    summary = pd.read_csv(tiny_run / "results/tables/training_summary.csv")
    assert summary["verdict"].notna().all()


def test_training_settings_are_columns():
    cols = TrainSettings().as_columns()
    assert cols["checkpoints"] == "0,10,30,100,300"
    assert not set(cols) & {f.name for f in dataclasses.fields(RunSettings)}


def test_general_form_slope_is_the_note_s_slope_when_variances_grow_linearly():
    """With V_k = k sigma^2 (V_0 = 0: the note's premise) the general form is the note's formula,
    so omega_general_slope is the formula's log-log slope over the same blocks; the measured
    omega_slope of a profile drawn from the formula agrees with it."""
    from depthlab.analysis.omega import fit_range, formula_abs
    from depthlab.studies.training.fit import per_seed

    depth, sigma2 = 24, 0.1
    k = np.arange(1, depth + 1)
    rows = [{"arm": "a", "label": "x", "seed": 0, "step": 0, "placement": "pre", "layer": layer,
             "sublayer": "block", "metric": "stream_var", "value": layer * sigma2}
            for layer in range(depth + 1)]
    rows += [{**rows[0], "layer": int(b), "metric": "omega_abs", "value": float(v)}
             for b, v in zip(k, formula_abs(k), strict=True)]
    rows += [{**rows[0], "layer": 0, "sublayer": "head", "metric": "grad_ratio", "value": 1.0},
             {**rows[0], "layer": depth, "metric": "token_corr", "value": 0.5}]
    out = per_seed(pd.DataFrame(rows)).set_index("metric")["value"]
    lo, hi = fit_range(depth)[-1]
    keep = (k >= lo) & (k <= hi)
    expected = np.polyfit(np.log(k[keep]), np.log(formula_abs(k[keep])), 1)[0]
    assert out["omega_general_slope"] == pytest.approx(expected, rel=1e-12)
    assert out["omega_slope"] == pytest.approx(expected, rel=1e-12)
    assert -0.6 < expected < -0.45  # about -1/2 over the deep blocks


@pytest.mark.slow
def test_bfloat16_autocast_trains_close_to_float32(corpus):
    """autocast bfloat16: the training step's forward runs in bfloat16 (its loss differs from
    float32's by bfloat16's rounding, about 1e-2 relative), the weights stay float32, and it
    still learns (the loss falls as the float32 run's does)."""
    ids, _ = corpus
    s = tiny()
    ts = TrainSettings(steps=5, lr=1e-2, checkpoints=(0,), eval_every=5, eval_batches=1)
    runs = {a: train_cell(s, dataclasses.replace(ts, autocast=a), ids) for a in ("off", "bfloat16")}
    assert all(t.dtype == torch.float32 for t in runs["bfloat16"].model.leaves())
    losses = {a: r.frame[r.frame["metric"] == "train_loss"].pivot(
        index="step", columns="seed", values="value") for a, r in runs.items()}
    first, last = losses["bfloat16"].iloc[0], losses["bfloat16"].iloc[-1]
    assert (last < first - 0.1).all()
    gap = (losses["bfloat16"] - losses["off"]).abs() / losses["off"]
    assert 0 < gap.to_numpy().max() < 0.05
