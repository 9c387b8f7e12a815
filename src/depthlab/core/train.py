"""Train a seed-batched character-level language model and probe it at checkpoints.

The model is the stack of depthlab.core.model (Pre-LN or Post-LN blocks, the final LayerNorm when
`uses_final_norm`, the linear cross-entropy head of `build`) fed by a character embedding
(N(0, 1), as `nn.Embedding`, so the stream enters at sd 1 as in the init studies) plus a learned
position embedding that starts at zero. Every leaf carries the seed axis S; the per-seed losses
are summed before the backward pass, and AdamW acts element by element, so each seed trains
exactly as it would alone (tested). The probes of depthlab.core.probes run at checkpoints on one
fixed validation batch, after a backward pass of that batch's next-character loss.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from depthlab.core.adamw import AdamW
from depthlab.core.corpus import split, unigram_entropy
from depthlab.core.io import atomic_path
from depthlab.core.logs import Progress
from depthlab.core.measure import check_device
from depthlab.core.model import Draw, StackParams, build, forward, per_seed_loss, torch_dtype
from depthlab.core.probes import Probe, backward, measures, pass_rows, probe_rows, run_probes
from depthlab.core.records import NonFiniteError, check_finite, tag
from depthlab.vocabulary.jobs import Job
from depthlab.vocabulary.metrics import Metric
from depthlab.vocabulary.settings import RunSettings
from depthlab.vocabulary.train_settings import TrainSettings, check_model

log = logging.getLogger(__name__)

# independent numpy random streams: per-seed training batches, validation and probe batches
TRAIN_STREAM, EVAL_STREAM, PROBE_STREAM = 1, 2, 3


@dataclass
class CharModel:
    """A seed-batched character model: embed (S, V, d), pos (S, T, d) and the stack."""

    embed: Tensor
    pos: Tensor
    stack: StackParams

    def leaves(self) -> list[Tensor]:
        return [self.embed, self.pos, *self.stack.leaves()]


def build_model(s: RunSettings, seeds: list[int]) -> CharModel:
    """Per seed: `build` (blocks, final norm, head, then its x and target), then from the same
    RNG stream the character embedding ~ N(0, 1); the position embedding starts at zero."""
    kw = {"dtype": torch_dtype(s.dtype)}
    stack, draw = build(s, seeds)
    embed = torch.stack([torch.randn(s.head_classes, s.d_model, generator=g, **kw)
                         for g in draw.rng])
    pos = torch.zeros(len(seeds), s.tokens, s.d_model, device=s.device, **kw)
    return CharModel(embed.to(s.device).requires_grad_(True), pos.requires_grad_(True), stack)


def embed_tokens(model: CharModel, ids: Tensor) -> Tensor:
    """Stream input (S, B, T, d) of token ids (S, B, T): character plus position embedding."""
    seed_index = torch.arange(ids.shape[0], device=ids.device).view(-1, 1, 1)
    return model.embed[seed_index, ids] + model.pos[:, None, : ids.shape[-1]]


def model_loss(model: CharModel, ids: Tensor, s: RunSettings, trace_grads: bool = False,
               removed: int | None = None, probed: bool = True):
    """Per-seed mean next-character cross-entropy (nats) of windows ids (S, B, T+1): predict
    ids[..., 1:] from ids[..., :-1], with block `removed` (1-based) ablated if given. Returns
    the losses (S,) and the forward trace (without the probes' reductions unless `probed`:
    depthlab.core.model.forward)."""
    s = dataclasses.replace(s, batch=ids.shape[1])
    x = embed_tokens(model, ids[..., :-1])
    y, trace = forward(model.stack, x, s, removed=removed, probed=probed)
    if trace_grads:
        for t in trace.stream:
            t.retain_grad()
    return per_seed_loss(y, model.stack, Draw(x, ids[..., 1:]), s), trace


def probe_model(model: CharModel, ids: Tensor, s: RunSettings) -> tuple[list[Probe], Tensor]:
    """The registered probes on one batch ids (S, B, T+1), after the backward pass of its loss;
    returns the probes and the per-seed loss. Leaves no gradient behind."""
    s = dataclasses.replace(s, batch=ids.shape[1])
    for t in model.leaves():
        t.grad = None
    loss, trace = model_loss(model, ids, s, trace_grads=s.grad_of == "input")
    backward(loss, model.stack, trace, s)
    probes = run_probes(model.stack, trace, s)
    for t in model.leaves():
        t.grad = None
    return probes, loss.detach()


def windows(data: Tensor, starts: np.ndarray, length: int) -> Tensor:
    """Token windows data[start : start + length] for an array of starts, same shape + (length,)."""
    index = torch.as_tensor(starts, device=data.device).unsqueeze(-1)
    return data[index + torch.arange(length, device=data.device)]


def fixed_batches(val_data: Tensor, s: RunSettings, ts: TrainSettings) -> tuple[np.ndarray, Tensor]:
    """The validation batches every cell and seed shares: the starts (eval_batches, batch) of
    the loss batches, and the probe batch ids (S, probe_batch, tokens + 1)."""
    last = len(val_data) - s.tokens - 1
    eval_starts = np.random.default_rng(EVAL_STREAM).integers(0, last, (ts.eval_batches, s.batch))
    probe_starts = np.random.default_rng(PROBE_STREAM).integers(0, last, ts.probe_batch)
    probe_ids = windows(val_data, probe_starts, s.tokens + 1).expand(s.seeds, -1, -1)
    return eval_starts, probe_ids


def optimizer(model: CharModel, ts: TrainSettings) -> AdamW:
    """AdamW; every matrix (embeddings, block weights, head) decays, biases and norms do not."""
    leaves = model.leaves()
    decay = [t for t in leaves if t.ndim >= 3]
    rest = [t for t in leaves if t.ndim < 3]
    return AdamW([(decay, ts.weight_decay), (rest, 0.0)], (ts.beta1, ts.beta2), ts.eps)


@torch.no_grad()
def head_input_of_windows(model: CharModel, ids: Tensor, s: RunSettings) -> Tensor:
    """What the loss head reads (S, N, d) for windows ids (S, B, T+1)."""
    return model_loss(model, ids, s, probed=False)[1].head_input


@measures(
    Metric("relative_update", "1", r"$\|\Delta F\| / \|F\|$",
           "relative change of the trained model's output from initialisation after `step` "
           "updates", sublayers="head", log=True, needs="training"),
)
def update_rows(outputs: list[Tensor], seeds: list[int]) -> pd.DataFrame:
    """`relative_update` at steps 1..t: the relative change of the model's output (what the
    head reads on the probe batch, outputs[k] after k updates) from initialisation,
    ||F(θ_k) − F(θ_0)|| / ||F(θ_0)|| per seed (Frobenius norms; DeepNet's "model update",
    Wang et al. 2022, sec. 3 and Fig. 5)."""
    first = outputs[0].flatten(1)
    change = torch.stack([(later.flatten(1) - first).norm(dim=1) for later in outputs[1:]])
    return _loss_rows("relative_update", list(range(1, len(outputs))),
                      change / first.norm(dim=1), seeds)


@torch.no_grad()
def validation_loss(model: CharModel, val_data: Tensor, eval_starts: np.ndarray, s: RunSettings,
                    removed: int | None = None) -> Tensor:
    """Per-seed next-character loss (nats, shape (S,)) averaged over the fixed validation
    batches `eval_starts`, with block `removed` ablated if given."""
    span = s.tokens + 1
    return torch.stack([
        model_loss(model, windows(val_data, b, span).expand(s.seeds, -1, -1), s,
                   removed=removed, probed=False)[0]
        for b in eval_starts]).mean(0)


@measures(
    Metric("ablated_val_loss", "nats", "validation loss without block l (nats)",
           "validation loss of the trained stack with block l removed", needs="training"),
)
def ablation_rows(model: CharModel, val_data: Tensor, eval_starts: np.ndarray, s: RunSettings,
                  step: int) -> pd.DataFrame:
    """Block ablation of the trained stack: `ablated_val_loss` (nats) at layer l is the
    validation loss with block l removed (the identity map in its place, every other block
    unchanged), for l = 1..L, on the same batches as `val_loss` (the loss it raises is the
    difference; LN-Scaling's "deep layers contribute more" and the notes' refinement claims
    are read from it)."""
    layers = list(range(1, s.depth + 1))
    values = torch.stack([validation_loss(model, val_data, eval_starts, s, removed=layer)
                          for layer in layers], dim=1)  # (S, L)
    frame = probe_rows([Probe("ablated_val_loss", "block", layers, values)], s.seed_list())
    frame["step"] = step
    return frame


@dataclass
class TrainResult:
    """The tidy rows of one trained cell and its final weights."""

    frame: pd.DataFrame
    model: CharModel


def check_finite_losses(values: Tensor, seeds: list[int], what: str, first_step: int,
                        cell: str) -> None:
    """Raise NonFiniteError naming the cell, step and seed of the first NaN/inf in values
    (n_steps, S) recorded from step `first_step` on."""
    bad = (~torch.isfinite(values)).nonzero()
    if len(bad):
        row, seed = bad[0].tolist()
        raise NonFiniteError(f"{cell}: non-finite {what} at step {first_step + row} "
                             f"for seed {seeds[seed]}")


def _loss_rows(metric: str, steps: list[int], values: Tensor, seeds: list[int]) -> pd.DataFrame:
    """Rows of a loss recorded at `steps`: values (n_steps, S)."""
    v = values.cpu().numpy()
    return pd.DataFrame({
        "seed": np.tile(seeds, len(steps)), "layer": 0, "sublayer": "head", "metric": metric,
        "value": v.reshape(-1), "step": np.repeat(steps, len(seeds)),
    })


@measures(
    Metric("train_loss", "nats", "training loss (nats)",
           "next-character loss of the batch of update step+1", sublayers="head",
           needs="training"),
    Metric("val_loss", "nats", "validation loss (nats)",
           "next-character loss on the fixed validation batches", sublayers="head",
           needs="training"),
    Metric("unigram_entropy", "nats", "unigram entropy (nats)",
           "entropy of the corpus's characters, the loss of a model that ignores context",
           sublayers="head", needs="training"),
)
def train_cell(s: RunSettings, ts: TrainSettings, ids: np.ndarray, cell: str = "") -> TrainResult:
    """Train all seeds of one cell on the encoded corpus `ids` and probe the checkpoints.

    Rows (one per seed, step, layer, sublayer, metric): `train_loss` (nats, the batch of update
    step+1 under the weights after `step` updates), `val_loss` (nats, mean over the fixed
    validation batches, every eval_every steps and at each checkpoint), at each checkpoint
    every probe plus `loss` (the probe batch's loss), the corpus's `unigram_entropy`
    (nats, step 0), `update_rows` at steps 1 to update_steps and, at the last step,
    `ablation_rows`. Raises NonFiniteError on NaN or inf.
    """
    check_device(s.device)
    train_ids, val_ids = split(ids, ts.val_fraction)
    train_data = torch.as_tensor(train_ids, device=s.device)
    val_data = torch.as_tensor(val_ids, device=s.device)
    seeds = s.seed_list()
    n_seeds, span = len(seeds), s.tokens + 1
    model = build_model(s, seeds)
    opt = optimizer(model, ts)
    seed_rngs = [np.random.default_rng([TRAIN_STREAM, seed]) for seed in seeds]
    last_train = len(train_ids) - span
    eval_starts, probe_ids = fixed_batches(val_data, s, ts)
    probe_frames, train_losses, val_steps, val_losses, outputs = [], [], [], [], []
    # a progress line per checkpoint, the steps since the last one as its cost
    progress = Progress(cell, list(np.diff(ts.probe_steps, prepend=-1)))
    for step in range(ts.steps + 1):
        if step <= ts.update_steps:  # the model's output at init and after each early update
            outputs.append(head_input_of_windows(model, probe_ids, s))
        if step in ts.probe_steps:
            probes, loss = probe_model(model, probe_ids, s)
            frame = pass_rows(probes, seeds, loss)
            frame["step"] = step
            check_finite(frame, f"{cell} at step {step}")
            probe_frames.append(frame)
            progress.step(f"checkpoint {step}")
        if step % ts.eval_every == 0 or step in ts.probe_steps:
            val = validation_loss(model, val_data, eval_starts, s)
            check_finite_losses(val[None], seeds, "val_loss", step, cell)
            val_steps.append(step)
            val_losses.append(val)
            log.info("%s: step %d val_loss %s", cell, step, val.tolist())
        if step == ts.steps:
            break
        batch = windows(train_data, np.stack([r.integers(0, last_train, s.batch)
                                              for r in seed_rngs]), span)
        opt.zero_grad()
        with torch.autocast(s.device, torch.bfloat16, enabled=ts.autocast == "bfloat16"):
            loss, _ = model_loss(model, batch, s, probed=False)
        loss = loss.float()
        loss.sum().backward()
        opt.step(ts.lr * ts.lr_factor(step))  # as torch's LambdaLR(lr_factor) sets it
        train_losses.append(loss.detach())
        if (step + 1) % ts.eval_every == 0:  # fail early, without a device sync every step
            recent = torch.stack(train_losses[-ts.eval_every:])
            check_finite_losses(recent, seeds, "train_loss", step + 1 - ts.eval_every, cell)
    train = torch.stack(train_losses)
    check_finite_losses(train, seeds, "train_loss", 0, cell)
    ablation = ablation_rows(model, val_data, eval_starts, s, ts.steps)
    check_finite(ablation, f"{cell} ablation at step {ts.steps}")
    entropy = torch.full((1, n_seeds), unigram_entropy(ids))
    frame = pd.concat([
        _loss_rows("unigram_entropy", [0], entropy, seeds),
        _loss_rows("train_loss", list(range(ts.steps)), train, seeds),
        _loss_rows("val_loss", val_steps, torch.stack(val_losses), seeds),
        *probe_frames,
        ablation,
        update_rows(outputs, seeds),
    ], ignore_index=True)
    for key, value in {**s.as_columns(), **ts.as_columns()}.items():
        frame[key] = value
    return TrainResult(frame, model)


def train_job(job: Job, ts: TrainSettings, ids: np.ndarray,
              vocab_size: int) -> tuple[pd.DataFrame, list[CharModel]]:
    """All cells of one job: the tagged rows (study, arm, job, label columns) and the final
    weights of each cell."""
    frames, models = [], []
    for cell in job.cells:
        check_model(cell.settings, vocab_size, f"{job.study}/{job.arm}/{cell.label}")
        result = train_cell(cell.settings, ts, ids, f"{job.study}/{job.arm}/{cell.label}")
        frames.append(tag(result.frame, job.study, job.arm, job.job, cell.label))
        models.append(result.model)
    return pd.concat(frames, ignore_index=True), models


def save_weights(models: list[CharModel], seeds: list[list[int]], path: str | Path) -> None:
    """Save the weights of trained cells (a list, one entry per cell) with their seeds."""
    state = [{"seeds": sd, "embed": m.embed.detach().cpu(), "pos": m.pos.detach().cpu(),
              "blocks": [{k: v.detach().cpu() for k, v in b.items()} for b in m.stack.blocks],
              "final": {k: v.detach().cpu() for k, v in m.stack.final.items()}}
             for m, sd in zip(models, seeds, strict=True)]
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def load_weights(path: str | Path, device: str = "cpu") -> list[CharModel]:
    """The trained cells saved by `save_weights`, as fresh leaf tensors on `device`."""

    def leaf(t: Tensor) -> Tensor:
        return t.to(device).requires_grad_(True)

    return [CharModel(leaf(c["embed"]), leaf(c["pos"]), StackParams(
        [{k: leaf(v) for k, v in b.items()} for b in c["blocks"]],
        {k: leaf(v) for k, v in c["final"].items()}))
        for c in torch.load(path, weights_only=True)]
