"""The tables and figures of the fixestraining study (docs/FIXES.md): do the fixes train without
warmup, and what does training do to their init-time probes? Declared once."""

from depthlab.vocabulary.targets import Target, declare

SETUP = ("A character-level model on Tiny Shakespeare: the fixes study's stack narrowed to d = "
         "64 (2 heads, 4x ReLU FFN, PyTorch's default init) at L = 24, float32, batches of 8 x "
         "64 characters, AdamW (cosine to a tenth of the peak rate, weight decay 0.1), 200 "
         "steps, with a linear warmup of 20 steps (10%) and without, 5 seeds "
         "(config/fixes.yaml); probes on one fixed validation batch of 4 sequences after a "
         "backward pass of its next-character loss.")
SHARED = ("Every placement at the rate they all trained at (peak 1e-3 in config/fixes.yaml).")
SWEEP = ("The sweep of training recipes: Post-LN, DeepNorm, Pre-LN and ReZero (one placement "
         "per family of the registry, and DeepNorm, the fix whose claim the comparison grades) "
         "at four peak rates half a decade apart with the 20-step warmup, and Post-LN and "
         "DeepNorm with 50- and 100-step warmups at 1e-3; a placement's best recipe is the one "
         "with the lowest seed mean of the final validation loss on the selection seeds (0-4 "
         "in config/fixes.yaml), and its loss is reported on 5 held-out seeds (500-504) "
         "trained at every recipe (config/fixes_recipes.yaml, a named run).")

# the arms of the sweep: the warmup arm's rate, the other rates, the longer warmups, the
# held-out seeds (a config without them, config/rezero_deep.yaml, has no sweep to show); the
# best recipes are reported on held-out seeds only (config/fixes_recipes.yaml), never on the
# seeds that chose them
HELD_OUT_ARMS = ("heldout_*",)
SWEEP_ARMS = ("warmup", "lr_*", "warmup_*", *HELD_OUT_ARMS)

# the arms of DeepNet's Fig. 5 (config/deepnet_update.yaml): the output's change over the first
# updates at several depths
UPDATE_ARMS = ("update*",)

# the arms of ReZero's "faster to a loss" (config/rezero_speed.yaml): ReZero against Post-LN
# at L = 12, the validation loss every 10 steps
SPEED_ARMS = ("speed*",)

# where the study's targets come in every list of them (the notes' order, then the fixes
# study's, then the scale study's; depthlab.studies finds the study by its package)
POSITION = 7

TARGETS = declare(
    "fixestraining",
    Target(
        "table_fixes_training",
        "fixes training: final validation loss per placement with and without warmup; probes "
        "at step 0 and at the end",
        draw="tables:summary", reads=("*",),
        title="Which placements train, with and without warmup (median across seeds, seed "
        "range beside)",
        note="trains = every seed's final validation loss below the corpus's unigram entropy "
        "(its value, measured on the corpus, is in the column's name: the loss of a model "
        "of the character frequencies alone). 'minus the other "
        "warmup arm' = this arm's median final validation loss minus the other's (nats/char). "
        "Probe cells: median [seed min, max]; grad ratio = ‖g_1‖/‖g_L‖, stream growth = "
        "rms(x_L)/rms(x_0) before any final norm, token corr = mean pairwise token cosine "
        "after the last block.",
        caption="Per placement and warmup arm: the validation loss at the last step (nats per "
        "character, median and seed range), whether every seed ends below the unigram "
        "entropy, the difference to the other warmup arm, and the first/last gradient ratio, "
        "stream growth and token correlation at step 0 and at the end (dimensionless; median "
        f"and seed range). {SHARED} {SETUP}",
    ),
    Target(
        "table_fixes_training_ranking",
        "fixes training: the placements ranked by final validation loss, which gaps the seeds "
        "resolve",
        draw="tables:ranking", reads=("*",),
        title="The placements ranked by final validation loss, per warmup arm, and which gaps "
        "the seeds resolve",
        note="val loss: median [seed min, max] at the last step (nats/char). Gap to next: the "
        "next placement's loss minus this one's per seed (paired: the same seed draws the "
        "same batches), median and 95% t-interval; resolved = the interval excludes 0; seed "
        "ranges disjoint = the next one's best seed is worse than this one's worst.",
        caption="Per warmup arm, every placement in order of its median final validation loss "
        "(nats per character, seed range beside), the paired per-seed gap to the next one "
        "with its 95% t-interval, and whether the seeds resolve it (interval above 0; seed "
        f"ranges disjoint). {SHARED} {SETUP}",
    ),
    Target(
        "fig_fixes_training_loss",
        "fixes training: train and validation loss by step, a panel per placement",
        draw="figures:loss", reads=("*",),
        caption="Training loss (10-step running median of the per-step seed medians) and "
        "validation loss (markers, seed range as bars) in nats per character against the "
        "optimiser step, a panel per placement, a line style per warmup arm; the grey line is "
        f"the corpus's unigram entropy. {SHARED} {SETUP}",
    ),
    Target(
        "fig_fixes_training_probes",
        "fixes training: the init-time probes at each checkpoint, per placement and warmup",
        draw="figures:probes", reads=("*",),
        caption="First/last gradient ratio, stream growth rms(x_L)/rms(x_0), token cosine after "
        "the last block, the log-log decay rate of ω over the deepest three quarters of the "
        "blocks and the last block's MLP branch-to-stream ratio (dimensionless) at each "
        "checkpoint against step (symlog), a column per warmup arm, a curve per placement; "
        f"median and seed range. {SHARED} {SETUP}",
    ),
    Target(
        "fig_fixes_model_change",
        "fixes training: DeepNet's model update over the first AdamW steps, a panel per depth",
        draw="figures:model_change", reads=UPDATE_ARMS,
        caption="The relative change of what the head reads on the probe batch from "
        "initialisation, ‖F(θ_t) − F(θ_0)‖ / ‖F(θ_0)‖ (Frobenius norms; dimensionless, log "
        "scale), after each AdamW update t, a panel per depth, a curve per placement (median, "
        "band: seed range): DeepNet's Fig. 5 (Wang et al. 2022), whose Post-LN updates grow "
        "with depth and DeepNet's stay small. Post-LN and Pre-LN at the paper's init "
        "(fairseq's), DeepNorm at its own; peak rate 1e-3 without warmup (cosine to a tenth). "
        "A character model of Tiny Shakespeare: the fixestraining study's stack (d = 64, 2 "
        "heads, 4x ReLU FFN, float32, batches of 8 x 64 characters, 5 seeds; "
        "config/deepnet_update.yaml).",
    ),
    Target(
        "table_fixes_steps_to_loss",
        "fixes training: steps to reach a validation loss, ReZero against Post-LN at L = 12",
        draw="tables:steps_to_loss", reads=SPEED_ARMS,
        title="Steps to reach a validation loss: ReZero against Post-LN (ReZero's \"56% "
        "faster\")",
        note="loss levels: fractions of the way from the corpus's unigram entropy (the loss of "
        "the character frequencies alone) down to the highest median final validation loss "
        "of the cells shown, in nats/char (from the loss at the first evaluation where a cell ends "
        "above the entropy). Steps: the first optimiser step at which a seed's "
        "validation loss reaches the level (linear between evaluations 10 steps apart), "
        "median [seed range]. Steps over Post-LN's: per seed, against the Post-LN cell of the "
        "same depth and recipe at the lowest level (paired: the same seed draws the same "
        "batches), mean [95% t]; the paper's 56% faster is 0.64.",
        caption="Per placement and recipe (warmup, peak learning rate): the final validation "
        "loss (nats per character; median and seed range), the optimiser steps each seed "
        "takes to reach three loss levels (median and seed range) and, beside Post-LN at the "
        "same recipe, the per-seed ratio of the steps (mean, 95% t-interval). ReZero's "
        "second training sentence (Bachlechner et al. 2020): 56% faster than the vanilla "
        "Transformer to 1.2 BPB on enwik8 at 12 layers. The fixestraining model at L = 12, "
        "600 AdamW steps (cosine to a tenth of the peak rate), PyTorch's default init, 5 seeds "
        "(config/rezero_speed.yaml).",
    ),
    Target(
        "table_fixes_lr_sweep",
        "fixes training: the recipe sweep, final validation loss per placement, warmup and rate",
        draw="tables:sweep", reads=SWEEP_ARMS,
        title="The recipe sweep: final validation loss per placement, warmup and peak rate "
        "(selection seeds)",
        note="val loss: seed mean [95% t-interval] and seed range at the last step (nats/char); "
        "seeds < entropy: the seeds whose final validation loss is below the corpus's unigram "
        "entropy (the loss of the character frequencies alone); best recipe: the placement's "
        "warmup and rate with the lowest mean.",
        caption="Per swept placement, warmup and peak learning rate, on the selection seeds: "
        "the final validation loss (nats per character; seed mean, 95% t-interval, seed "
        "range), how many seeds end below the unigram entropy, and the placement's best "
        f"recipe. {SWEEP} {SETUP}",
    ),
    Target(
        "table_fixes_best_rate",
        "fixes training: the swept placements ranked at their best recipes on held-out seeds, "
        "paired against Pre-LN",
        draw="tables:best_rate_ranking", reads=SWEEP_ARMS, needs=HELD_OUT_ARMS,
        title="The swept placements ranked at their best recipes (chosen on the selection "
        "seeds, reported on held-out seeds)",
        note="interior: rates below and above the best were swept at its warmup. val loss: "
        "seed mean [95% t-interval] at the last step (nats/char) of the seeds named under "
        "'reported on' (held-out seeds took no part in the choice); the selection seeds' mean "
        "beside it. minus Pre-LN and gap to next: per-seed differences on the same seeds "
        "(paired: the same seed draws the same batches), mean [95% t]; resolved = the interval "
        "excludes 0.",
        caption="Each swept placement at its best recipe (warmup, peak learning rate) chosen "
        "on the selection seeds, in order of its mean final validation loss on the held-out "
        "seeds (nats per character): the rates and warmups swept, whether the best rate is "
        "interior, the held-out loss with its 95% t-interval and the selection seeds' mean, "
        "the held-out seeds below the unigram entropy, and the paired per-seed differences to "
        "Pre-LN at its best recipe and to the next placement (mean, 95% t-interval). "
        f"{SWEEP} {SETUP}",
    ),
    Target(
        "fig_fixes_lr_sweep",
        "fixes training: final validation loss against the learning rate, per placement",
        draw="figures:lr_sweep", reads=SWEEP_ARMS,
        caption="Final validation loss (nats per character; line: seed mean, band: seed range) "
        "on the selection seeds against the peak learning rate of AdamW (log scale), a panel "
        "per warmup length, a curve per swept placement in the registry's colour and marker, "
        "its best recipe circled; the grey line is the "
        f"corpus's unigram entropy. {SWEEP} {SETUP}",
    ),
)
