"""Requests against use: what depthlab.pipeline.requests predicts for each measure and train job
beside what the job used (Snakemake's `benchmark:` files: `cpu_time`, single-thread CPU
seconds, which contention between jobs does not inflate as it does the wall time; `max_rss`,
peak MB), for one or more finished runs:

    python -m benchmarks.requests RUN_DIR:config/config.yaml,config/training_seeds.yaml \\
        OTHER_RUN_DIR:config/fixes.yaml [--fit] [--out results/benchmarks]

Each argument is a working directory that ran the workflow and the config files it ran with
(merged in order, as Snakemake merges --configfile). Writes requests.csv (one row per job:
predicted and measured seconds and MB, their ratios, the requests) and requests.png (predicted
against measured, log-log, with the 2x band) under --out, and prints the worst ratios. --fit
prints the least-squares constants (relative errors) for requests.py from these jobs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
import yaml  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402
from scipy.optimize import nnls  # noqa: E402
from snakemake.utils import update_config  # noqa: E402

from depthlab.pipeline import cost, paths, requests  # noqa: E402
from depthlab.pipeline.train_settings import training_arms  # noqa: E402
from depthlab.pipeline.validate import check_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def merged(files: list[Path]) -> dict:
    """The config files merged key by key, later files winning (Snakemake's own merge)."""
    config: dict = {}
    for f in files:
        update_config(config, yaml.safe_load(f.read_text()))
    return config


def jobs_used(run: Path, configs: list[str]) -> pd.DataFrame:
    """One row per job of the run with a benchmark file: its kind, predictors and use."""
    config = merged([run / c for c in configs])
    jobs = check_config(config, ROOT / "workflow/schemas/config.schema.yaml")
    training = training_arms(config, jobs)
    rows = []
    for job in jobs:
        kind = "train" if (job.study, job.arm) in training else "measure"
        bench = run / paths.benchmark(kind).format(study=job.study, arm=job.arm, job=job.job)
        if not bench.exists():
            continue
        used = pd.read_csv(bench, sep="\t").iloc[0]
        steps = 0.0
        if kind == "train":
            ts = training[(job.study, job.arm)]
            flops = sum(cost.training_flops(c.settings, ts) for c in job.cells)
            seconds, mb = requests.train_seconds(job, ts), requests.train_mb(job)
            steps = requests.layer_steps(job, ts)
        else:
            flops = cost.job_flops(job)
            seconds, mb = requests.measure_seconds(job), requests.measure_mb(job)
        rows.append({
            "run": " + ".join(Path(c).stem for c in configs), "kind": kind,
            "job": f"{job.study}/{job.arm}/{job.job}",
            "flops": flops, "elements": requests.activation_elements(job), "layer_steps": steps,
            "pass_mb": (requests.train_bytes(job) if kind == "train" else
                        max(cost.pass_bytes(c.settings) for c in job.cells)) / 1e6,
            "predicted_s": seconds, "cpu_s": float(used["cpu_time"]), "wall_s": float(used["s"]),
            "predicted_mb": mb, "rss_mb": float(used["max_rss"]),
            "runtime_request_min": requests.runtime_min(seconds),
            "mem_request_mb": requests.mem_mb(mb),
        })
    frame = pd.DataFrame(rows)
    frame["time_ratio"] = frame["predicted_s"] / frame["cpu_s"]
    frame["mem_ratio"] = frame["predicted_mb"] / frame["rss_mb"]
    return frame


def fit(frame: pd.DataFrame) -> dict[str, float]:
    """Non-negative least squares on relative errors: measure seconds = a + flops / R +
    elements x p; train seconds = a + flops / R_train + layer steps x q (a shared); MB =
    B + k x pass MB (measure) or B + k_train x train MB (B shared). Returns the constants
    under requests.py's names."""
    train = frame[frame["kind"] == "train"]
    ones = np.ones(len(frame))
    design = np.column_stack([
        ones, np.where(frame["kind"] == "measure", frame["flops"], 0),
        np.where(frame["kind"] == "measure", frame["elements"], 0),
        np.where(frame["kind"] == "train", frame["flops"], 0), frame["layer_steps"]])
    weight = 1 / frame["cpu_s"].to_numpy()
    a, per_flop, per_element, per_train_flop, per_step = nnls(design * weight[:, None], ones)[0]
    is_train = (frame["kind"] == "train").to_numpy()
    mem = np.column_stack([np.ones(len(frame)), np.where(is_train, 0, frame["pass_mb"]),
                           np.where(is_train, frame["pass_mb"], 0)])
    base, share, train_share = nnls(mem / frame["rss_mb"].to_numpy()[:, None],
                                    np.ones(len(frame)))[0]
    out = {"STARTUP_S": a, "MEASURE_FLOPS_PER_S": 1 / per_flop if per_flop else np.inf,
           "PROBE_S_PER_ELEMENT": per_element, "BASE_MB": base, "PASS_SHARE": share}
    if len(train):
        out["TRAIN_FLOPS_PER_S"] = 1 / per_train_flop if per_train_flop else np.inf
        out["TRAIN_S_PER_LAYER_STEP"] = per_step
        out["TRAIN_SHARE"] = train_share
    return out


def figure(frame: pd.DataFrame, path: Path) -> None:
    """Predicted against measured seconds and MB, log-log, the 1x line and the 2x band."""
    fig, axes = plt.subplots(1, 2, figsize=(7.2, 3.4), constrained_layout=True)
    for ax, (pred, used, unit) in zip(axes, [("predicted_s", "cpu_s", "CPU seconds"),
                                             ("predicted_mb", "rss_mb", "peak RSS (MB)")],
                                      strict=True):
        sns.scatterplot(data=frame, x=used, y=pred, hue="kind", style="run", ax=ax, s=22)
        lo = min(frame[used].min(), frame[pred].min()) / 1.5
        hi = max(frame[used].max(), frame[pred].max()) * 1.5
        xs = np.array([lo, hi])
        ax.plot(xs, xs, color="black", lw=0.8, label="predicted = used")
        ax.fill_between(xs, xs / 2, xs * 2, color="grey", alpha=0.15, lw=0, label="within 2x")
        ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi),
               xlabel=f"used: {unit}", ylabel=f"predicted: {unit}")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_minor_formatter(NullFormatter())
        ax.legend(fontsize=6)
    fig.suptitle("Each job's predicted use (depthlab.pipeline.requests) against its benchmark")
    fig.savefig(path, dpi=200)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="RUN_DIR:config1.yaml,config2.yaml")
    parser.add_argument("--fit", action="store_true", help="print the fitted constants")
    parser.add_argument("--out", type=Path, default=ROOT / "results/benchmarks")
    args = parser.parse_args()
    frame = pd.concat([jobs_used(Path(d), c.split(","))
                       for d, c in (r.split(":", 1) for r in args.runs)], ignore_index=True)
    args.out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out / "requests.csv", index=False)
    figure(frame, args.out / "requests.png")
    for ratio in ("time_ratio", "mem_ratio"):
        print(f"{ratio}: {frame[ratio].min():.2f} to {frame[ratio].max():.2f} over "
              f"{len(frame)} jobs; outside [0.5, 2]: "
              f"{int(((frame[ratio] < 0.5) | (frame[ratio] > 2)).sum())}")
    if args.fit:
        for name, value in fit(frame).items():
            print(f"{name} = {value:.4g}")


if __name__ == "__main__":
    main()
