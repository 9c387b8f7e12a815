"""The tables of the fixes study: every placement x probe at one depth, across widths, and the
update per unit learning rate across depths, optimisers and learning rates."""

from __future__ import annotations

import itertools

import pandas as pd

from depthlab.analysis.select import pick
from depthlab.analysis.tables import fmt, median_range, spread
from depthlab.studies.fixes.fit import CALIBRATED, FIX_LABELS, linear
from depthlab.vocabulary.inits import INIT_KINDS
from depthlab.vocabulary.placements import PLACEMENTS
from depthlab.vocabulary.settings import UPDATE_OPTIMIZERS, UPDATE_PARAMS
from depthlab.vocabulary.variants import base, is_own, order
from depthlab.vocabulary.variants import label as placement_label


def fix_order(fits: pd.DataFrame) -> list[str]:
    """The fixes of `fits` in the plotting order (fit.FIX_ORDER), each own block right after
    the placement it follows (depthlab.vocabulary.variants)."""
    present = set(fits["fix"].dropna()) if "fix" in fits else set()
    return [*order(present - {CALIBRATED}), *([CALIBRATED] if CALIBRATED in present else [])]


def fix_label(fix: str) -> str:
    """A fix as a reader sees it: FIX_LABELS's, an own block's name ('make_block (own
    block)')."""
    return FIX_LABELS[fix] if fix in FIX_LABELS else placement_label(fix)

# (quantity, column): the probes of the notes, one number per seed each (fit.QUANTITIES)
PROBES = (
    ("grad_ratio", "grad ratio ‖g_1‖/‖g_L‖"),
    ("grad_ratio_exponent", "grad ratio exponent across depths"),
    ("stream_growth", "stream growth rms(x_L)/rms(x_0)"),
    ("stream_exponent", "stream exponent across depths"),
    ("omega_last", "ω_L = mean|D_L|"),
    ("omega_slope", "ω decay rate (log-log slope)"),
    ("token_corr_last", "token corr after block L"),
    ("head_token_corr", "token corr of the head input"),
    ("branch_ratio_last_attn", "branch/stream attn, block L"),
    ("branch_ratio_last_mlp", "branch/stream MLP, block L"),
    ("head_input_sd", "head input sd"),
    ("carry_growth", "2nd stream growth sd(x_d,L)/sd(x_0)"),
    ("carry_exponent", "2nd stream exponent across depths"),
)
ACROSS = {"grad_ratio_exponent", "stream_exponent", "carry_exponent",
          "model_update_exponent"}  # no depth of their own
# the papers' central claims at each depth (arm central): (quantity, column)
CENTRAL = (
    ("jacobian_rms_sv", "Jacobian rms σ"),
    ("jacobian_max_sv", "Jacobian max σ"),
    ("model_update", "update rms(ΔF)"),
)
UPDATE_EXPONENT = ("model_update_exponent", "update exponent across depths")

# the first/last gradient ratio under each reading of "a block's gradient" and of the loss: the
# arm that measures it -> its label. Under "weight matrices" no LayerNorm is counted for any
# placement, so the norm that ends Post-LN's, DeepNorm's and ResiDual's last block (it acts as
# their final norm) and Pre-LN's final norm (no block's) count alike: not at all.
GRAD_READINGS = {
    "depth": "all parameters, MSE",
    "grad_weights": "weight matrices, MSE",
    "grad_ce": "all parameters, CE",
    "grad_ce_weights": "weight matrices, CE",
}
ZERO_BY_CONSTRUCTION = {"rezero"}  # its weight matrices get no gradient at init (alpha = 0)


def _row(fits: pd.DataFrame, fix: str, arms: list[str], probes, **where) -> dict | None:
    """One fix's probe columns from the rows of `arms` matching `where` (None if it has none)."""
    row, found = {}, False
    for quantity, column in probes:
        cells = pick(fits, quantity=quantity, fix=fix)
        cells = cells[cells["arm"].isin(arms)]
        for key, value in where.items():
            if not (quantity in ACROSS and key == "depth"):
                cells = cells[cells[key] == value]
        if len(cells) > 1:
            raise ValueError(f"{fix} {quantity} {where}: {len(cells)} rows, not one")
        row[column] = median_range(cells.iloc[0]) if len(cells) else "—"
        found |= quantity not in ACROSS and len(cells) == 1
    return row if found else None


def probes_at_depth(fits: pd.DataFrame, depth: int) -> pd.DataFrame:
    """Every placement (and Pre-LN with calibrated scales) by every probe at one depth: the
    median across seeds with the seed range, at the study's width; exponents across the depths
    of the arm (6..192 in the full study) are the same at every depth."""
    arms = sorted(set(fits["arm"]) - {a for a in fits["arm"].unique() if a.startswith("width")})
    rows = []
    for fix in fix_order(fits):
        row = _row(fits, fix, arms, PROBES, depth=depth)
        if row is not None:
            rows.append({"placement": fix_label(fix), **row})
    return pd.DataFrame(rows)


def probes_at_96(fits: pd.DataFrame) -> pd.DataFrame:
    """probes_at_depth at L = 96."""
    return probes_at_depth(fits, 96)


def probes_at_192(fits: pd.DataFrame) -> pd.DataFrame:
    """probes_at_depth at L = 192."""
    return probes_at_depth(fits, 192)


def central(fits: pd.DataFrame) -> pd.DataFrame:
    """Every placement (rows) by the papers' central claims at each depth of the arms read: the
    input-output Jacobian's rms and largest singular value (ReZero's dynamical isometry) and the
    head input's rms change after one Adam step (DeepNet's bounded update), then the update's
    log-log exponent across the depths; median across seeds [seed range]."""
    arms = sorted(fits["arm"].unique())
    depths = sorted(pick(fits, quantity="model_update")["depth"].unique())
    rows = []
    for fix in fix_order(fits):
        row = {}
        for depth in depths:
            probes = [(q, f"{column}, L = {int(depth)}") for q, column in CENTRAL]
            last = [UPDATE_EXPONENT] if depth == depths[-1] else []
            row.update(_row(fits, fix, arms, [*probes, *last], depth=depth) or {})
        if row:
            rows.append({"placement": fix_label(fix), **row})
    return pd.DataFrame(rows)


def reading_ratios(fits: pd.DataFrame) -> tuple[pd.DataFrame, list]:
    """The gradient-ratio rows of the GRAD_READINGS arms, and the depths every one of those
    arms present has."""
    ratio = pick(fits, quantity="grad_ratio")
    ratio = ratio[ratio["arm"].isin(list(GRAD_READINGS))]
    depths = sorted(set.intersection(*(set(ratio.loc[ratio["arm"] == arm, "depth"])
                                       for arm in GRAD_READINGS if arm in set(ratio["arm"]))))
    return ratio, depths


def grad_readings(fits: pd.DataFrame) -> pd.DataFrame:
    """The first/last block gradient ratio of every placement at each depth the reading arms
    share, under every reading of GRAD_READINGS: median across seeds [seed range]; ReZero's
    weight-matrix readings are 0/0 at init (its weights get no gradient while alpha = 0)."""
    ratio, depths = reading_ratios(fits)
    rows = []
    for depth in depths:
        for fix in fix_order(fits):
            cells = pick(ratio, fix=fix, depth=depth)
            if cells.empty:
                continue
            row = {"placement": fix_label(fix), "L": int(depth)}
            for arm, label in GRAD_READINGS.items():
                cell = cells[cells["arm"] == arm]
                zero = fix in ZERO_BY_CONSTRUCTION and "weight" in label
                row[label] = median_range(cell.iloc[0]) if len(cell) else (
                    "0/0 by construction" if zero else "—")
            rows.append(row)
    return pd.DataFrame(rows)


# the init axis: (quantity, gradient reading, column); the readings' cells are those of the
# init arms with that grad_of (MSE)
INIT_PROBES = (
    ("grad_ratio", "params", "grad ratio, all parameters"),
    ("grad_ratio", "weights", "grad ratio, weight matrices"),
    ("stream_growth", "params", "stream growth rms(x_L)/rms(x_0)"),
    ("omega_slope", "params", "ω decay rate (log-log slope)"),
    ("token_corr_last", "params", "token corr after block L"),
    ("head_token_corr", "params", "token corr of the head input"),
)


def _init_name(fix: str, init: str) -> str:
    """The init a cell's weights come from: its placement's own (its paper's or its official
    code's) where it has one (it then runs with the setting torch_default), else the init
    setting's."""
    if is_own(fix):
        return "the block's own"
    return "its own" if PLACEMENTS[base(fix)].own_init else INIT_KINDS[init].label


def init_axis(fits: pd.DataFrame) -> pd.DataFrame:
    """Every placement under each init and with or without biases, at each depth of the init
    arms: the init-time probes of INIT_PROBES, median across seeds [seed range]; '—' where a
    reading does not apply (ReZero's weight matrices: 0/0 at init)."""
    rows = []
    for depth in sorted(fits["depth"].dropna().unique()):
        for fix in fix_order(fits):
            mine = fits[(fits["fix"] == fix) & (fits["depth"] == depth)]
            for init in [i for i in INIT_KINDS if i in set(mine["init"])]:
                for bias in sorted(set(mine.loc[mine["init"] == init, "bias"]), reverse=True):
                    row = {"placement": fix_label(fix), "L": int(depth),
                           "init": _init_name(fix, init), "biases": "on" if bias else "off"}
                    for quantity, grad_of, column in INIT_PROBES:
                        cell = pick(mine, quantity=quantity, init=init, bias=bias,
                                    grad_of=grad_of)
                        row[column] = median_range(cell.iloc[0]) if len(cell) == 1 else "—"
                    rows.append(row)
    return pd.DataFrame(rows)


def width_depth(fits: pd.DataFrame) -> int:
    """The depth of the width arms (one depth for all of them)."""
    depths = fits.loc[fits["arm"].str.startswith("width"), "depth"].dropna().unique()
    if len(depths) != 1:
        raise ValueError(f"the width arms need one depth, got {sorted(depths)}")
    return int(depths[0])


def width(fits: pd.DataFrame) -> pd.DataFrame:
    """Every placement at the width arms' depth (L = 24 in the full study) and each width d
    (the depth arm's cells give the study's own width): the probes of one cell, median and
    seed range."""
    depth = width_depth(fits)
    at_depth = fits[fits["depth"] == depth]
    probes = [(q, c) for q, c in PROBES if q not in ACROSS]
    rows = []
    for fix in fix_order(fits):
        for d in sorted(at_depth.loc[at_depth["fix"] == fix, "d_model"].unique()):
            row = _row(at_depth, fix, sorted(at_depth["arm"].unique()), probes, depth=depth,
                       d_model=d)
            if row is not None:
                heads = pick(at_depth, fix=fix, d_model=d)["heads"].iloc[0]
                rows.append({"placement": fix_label(fix), "L": depth, "d": int(d),
                             "heads": int(heads), **row})
    return pd.DataFrame(rows)


# the update probe's first step (update_optimizer) and what it moves (update_params) as a
# reader names them
STEP_NAMES = {"adam": "Adam", "sgd": "SGD"}
MOVED_NAMES = {"all": "every parameter", "weights": "weight matrices (DeepNet's θ)",
               "sublayer": "weight matrices and biases"}


def _regime(fits: pd.DataFrame, curve: pd.DataFrame, smaller: float | None,
            larger: float | None) -> str:
    """Whether the lr of one placement x optimiser x lr curve is in the linear regime at each
    of its depths: by its own update_linearity (its dF/η over that at the next smaller lr,
    `smaller`); at the smallest lr (smaller None) by that of the next larger lr, `larger`:
    linear there, it is here too (to first order its departure is η/larger of that one's),
    else it cannot be told. 'yes', or the depths where it is not ('no at L = ...') or cannot
    be told ('untested at L = ...')."""
    own = smaller is not None
    lr = curve["update_lr"].iloc[0] if own else larger
    ratios = pick(fits, quantity="update_linearity", fix=curve["fix"].iloc[0],
                  update_optimizer=curve["update_optimizer"].iloc[0],
                  update_params=curve["update_params"].iloc[0], update_lr=lr)
    ok = {int(r["depth"]): linear(r) for _, r in ratios.iterrows()}
    depths = sorted(int(d) for d in curve["depth"])
    failed = [d for d in depths if ok.get(d) is False]
    unknown = [d for d in depths if d not in ok]
    verdicts = (("no", failed), ("untested", unknown)) if own else (
        ("untested", sorted(failed + unknown)),)
    return "; ".join(f"{word} at L = {', '.join(map(str, found))}"
                     for word, found in verdicts if found) or "yes"


def update_response(fits: pd.DataFrame) -> pd.DataFrame:
    """Every placement x first step (update_optimizer) x parameters it moves (update_params) x
    learning rate η of the arms read: the head input's change per unit lr, dF/η =
    model_update / η, at each depth (median across seeds [seed range]); its log-log exponent
    across the depths (the mean across seeds and the 95% t-interval of the seed mean); whether
    η is in the linear regime (`_regime`)."""
    response = pick(fits, quantity="update_response")
    depths = sorted(response["depth"].unique())
    lrs = sorted(response["update_lr"].unique())
    rows = []
    for fix, step, moved in itertools.product(fix_order(fits), UPDATE_OPTIMIZERS, UPDATE_PARAMS):
        for i, lr in enumerate(lrs):
            curve = pick(response, fix=fix, update_optimizer=step, update_params=moved,
                         update_lr=lr)
            if curve.empty:
                continue
            row = {"placement": fix_label(fix), "first step": STEP_NAMES[step],
                   "moves": MOVED_NAMES[moved], "η": lr}
            for depth in depths:
                cell = curve[curve["depth"] == depth]
                row[f"dF/η, L = {int(depth)}"] = median_range(cell.iloc[0]) if len(
                    cell) else "—"
            exponent = pick(fits, quantity="model_update_exponent", fix=fix,
                            update_optimizer=step, update_params=moved, update_lr=lr)
            row["exponent across depths"] = (
                f"{fmt(exponent['mean'].iloc[0])} "
                f"{spread(exponent['ci_lo'].iloc[0], exponent['ci_hi'].iloc[0])}"
                if len(exponent) else "—")
            row["linear regime"] = _regime(fits, curve, lrs[i - 1] if i else None,
                                           lrs[i + 1] if i + 1 < len(lrs) else None)
            rows.append(row)
    return pd.DataFrame(rows)
