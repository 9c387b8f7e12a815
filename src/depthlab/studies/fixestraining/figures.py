"""The figures of the fixestraining study: loss curves per placement, and the probes at the
checkpoints, with and without warmup (median across seeds, seed range as a band)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from depthlab.analysis.select import pick
from depthlab.analysis.style import PROBE_AXES, band, log_scale
from depthlab.pipeline.placements import COLORS, LABELS, ORDER

WARMUP_STYLES = ("-", "--", ":", "-.")


def _warmups(frame: pd.DataFrame) -> list[int]:
    return sorted(int(w) for w in frame["warmup_steps"].unique())


def loss(fits: pd.DataFrame):
    """A panel per placement: the train loss (10-step running median of the per-step seed
    medians) and the validation loss (markers, seed range as bars) against step, a line style
    per warmup arm; the grey line is the corpus's unigram entropy."""
    train = pick(fits, quantity="train_loss")
    val = pick(fits, quantity="val_loss")
    entropy = pick(fits, quantity="unigram_entropy")["median"].iloc[0]
    placements = [p for p in ORDER if p in set(train["placement"])]
    cols = 3
    rows = int(np.ceil(len(placements) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.8 * rows), squeeze=False,
                             sharex=True, sharey=True)
    for ax in axes.flat[len(placements):]:
        ax.set_visible(False)
    for ax, placement in zip(axes.flat, placements, strict=False):
        for i, warmup in enumerate(_warmups(train)):
            style = WARMUP_STYLES[i % len(WARMUP_STYLES)]
            where = {"placement": placement, "warmup_steps": warmup}
            t = pick(train, **where).sort_values("step")
            ax.plot(t["step"], t["median"].rolling(10, min_periods=1).median(), style,
                    color=COLORS[placement], lw=0.9, label=f"train, warmup {warmup}")
            v = pick(val, **where).sort_values("step")
            ax.errorbar(v["step"], v["median"], [v["median"] - v["min"], v["max"] - v["median"]],
                        fmt="o", ls="none", color=COLORS[placement], mfc="white" if i else None,
                        ms=3, lw=0.8, label=f"validation, warmup {warmup}")
        ax.axhline(entropy, color="grey", lw=0.8, ls="-.", label="unigram entropy")
        depth = int(pick(train, placement=placement)["depth"].iloc[0])
        ax.set_title(f"{LABELS[placement]}, L = {depth}", fontsize=8)
        ax.legend(fontsize=5.5)
    for ax in axes[:, 0]:
        ax.set_ylabel("loss (nats/char)")
    for ax in axes[-1]:
        ax.set_xlabel("step")
    n = int(val["n_seeds"].max())
    fig.suptitle(f"Character-level loss on Tiny Shakespeare by placement, with and without "
                 f"warmup (median and range of {n} seeds)")
    return fig


PROBES = ("grad_ratio", "stream_growth", "token_corr_last", "omega_slope",
          "branch_ratio_last_mlp")


def probes(fits: pd.DataFrame):
    """Rows: the probes at each checkpoint against step (symlog x); columns: the warmup arms;
    a curve per placement (a quantity that is 0 at a checkpoint is left out of a log panel)."""
    warmups = _warmups(pick(fits, quantity="grad_ratio"))
    fig, axes = plt.subplots(len(PROBES), len(warmups), figsize=(4.4 * len(warmups),
                             2.4 * len(PROBES)), squeeze=False, sharex=True, sharey="row")
    for r, quantity in enumerate(PROBES):
        ylabel, log_y = PROBE_AXES[quantity]
        for c, warmup in enumerate(warmups):
            ax = axes[r][c]
            frame = pick(fits, quantity=quantity, warmup_steps=warmup)
            for placement in ORDER:
                sub = frame[frame["placement"] == placement]
                if log_y:
                    sub = sub[sub["median"] > 0]
                if not sub.empty:
                    band(ax, sub, "step", LABELS[placement], COLORS[placement], marker="o",
                         ms=2.5)
            ax.set_xscale("symlog", linthresh=10)
            ax.set_xlim(left=0)
            if log_y:
                log_scale(ax, "y")
            if r == 0:
                ax.set_title(f"warmup {warmup} steps")
            if c == 0:
                ax.set_ylabel(ylabel, fontsize=8)
            if r == len(PROBES) - 1:
                ax.set_xlabel("step")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", fontsize=7)
    n = int(pick(fits, quantity="grad_ratio")["n_seeds"].max())
    fig.suptitle(f"The init-time probes during training, per placement (median and range of "
                 f"{n} seeds; probe batch of the validation split)")
    return fig
