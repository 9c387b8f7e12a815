"""Requests against use: what depthlab.planner.resources predicts for each measure and train job
beside what the job used, for one or more finished runs:

- seconds: the CPU seconds the job logged at exit (`used cpu_s=`, depthlab.core.usage.log_use;
  one thread a job, so what the job takes on a core of its own, whatever else shared the
  machine); for a job of a run from before that line, its wall time (Snakemake's `benchmark:`
  file, column `s`), valid where the run had a core per job and nothing else running;
- peak MB: the VmHWM the job logged (`peak_mb=`), else the benchmark file's `max_rss`, which
  Snakemake samples every 30 s after a job's first 15 s, so that it can miss the peak.

The column `measured_from` says which. Usage:

    python -m benchmarks.resources RUN_DIR:config/config.yaml,config/training_seeds.yaml \\
        OTHER_RUN_DIR:config/fixes.yaml [--fit] [--out results/benchmarks]

Each argument is a working directory that ran the workflow and the config files it ran with
(merged in order onto config/config.yaml, as the workflow merges them). Writes resources.csv
(one row per job: predicted and measured seconds and MB, their ratios, the requests) and
resources.png (predicted against measured, log-log, with the 2x band) under --out, and prints
the worst ratios. --fit prints the least-squares constants (relative errors) for resources.py
from these jobs, and the ratios, table and figure with them.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402
from scipy.optimize import nnls  # noqa: E402

from depthlab.planner import cost, resources  # noqa: E402
from depthlab.planner.catalogue import unshared  # noqa: E402
from depthlab.planner.overlay import config_of  # noqa: E402
from depthlab.planner.reuse import reuse  # noqa: E402
from depthlab.planner.validate import check_config  # noqa: E402
from depthlab.vocabulary import paths
from depthlab.vocabulary.jobs import Job  # noqa: E402
from depthlab.vocabulary.train_settings import training_arms  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def config_jobs(config_files: list[Path]) -> tuple[list[Job], dict, dict]:
    """The jobs of the merged config files, its training arms (depthlab.vocabulary.
    train_settings.training_arms) and the cells each job copies (depthlab.planner.reuse)."""
    config = config_of(ROOT, *config_files)
    jobs = check_config(config, ROOT / "workflow/schemas/config.schema.yaml")
    return jobs, training_arms(config, jobs), reuse(jobs, unshared(config))


def jobs_used(run: Path, configs: list[str]) -> pd.DataFrame:
    """One row per job of the run with a benchmark file: its kind, predictors and use."""
    jobs, training, copies = config_jobs([run / c for c in configs])
    rows = []
    for job in jobs:
        kind = "train" if (job.study, job.arm) in training else "measure"
        bench = run / paths.benchmark(kind).format(study=job.study, arm=job.arm, job=job.job)
        if not bench.exists():
            continue
        used = pd.read_csv(bench, sep="\t").iloc[0]
        log = (run / paths.job_log(kind).format(study=job.study, arm=job.arm,
                                                job=job.job)).read_text()
        logged = re.search(r"used cpu_s=([0-9.]+) peak_mb=([0-9.]+)", log)
        on_device = re.search(r"device cuda peak_mb=([0-9.]+)", log)
        device = "cuda" if on_device else "cpu"
        row = {"run": " + ".join(Path(c).stem.replace("config", "default") for c in configs),
               "kind": kind, "job": f"{job.study}/{job.arm}/{job.job}", "device": device,
               "flops": 0.0, "elements": 0.0, "drawn": 0.0, "calls": 0.0, "layer_steps": 0.0,
               "train_flops": 0.0, "graph_mb": 0.0, "stream_mb": 0.0, "train_mb": 0.0}
        if kind == "train":
            ts = training[(job.study, job.arm)]
            row["train_flops"] = sum(cost.training_flops(c.settings, ts) for c in job.cells)
            row["layer_steps"] = resources.layer_steps(job, ts)
            row["train_mb"] = resources.train_bytes(job) / 1e6
            seconds, mb = resources.train_seconds(job, ts, device), resources.train_mb(job)
            device_mb = resources.train_device_mb(job, device)
        else:
            copied = copies.get((job.study, job.arm, job.job), {})
            row.update(resources.measure_terms(job, copied))
            cells = resources.measured(job, copied)
            if cells:  # the pass that sets the predicted peak, by kind
                top = max(cells, key=lambda s: resources.pass_share(s) * cost.pass_bytes(s))
                row["stream_mb" if cost.streamed(top) else "graph_mb"] = (
                    cost.pass_bytes(top) / 1e6)
            seconds = resources.measure_seconds(job, copied, device)
            mb, device_mb = resources.measure_mb(job, copied), resources.device_mb(job, copied,
                                                                                   device)
        # a GPU job's seconds are its wall time (the device and its CPU threads work at once)
        used_s = float(logged[1]) if logged and not on_device else float(used["s"])
        rows.append({**row, "predicted_s": seconds, "wall_s": float(used["s"]),
                     "used_s": used_s, "predicted_mb": mb,
                     "used_mb": float(logged[2]) if logged else float(used["max_rss"]),
                     "measured_from": "job log" if logged else "benchmark file",
                     "runtime_request_min": resources.runtime_min(seconds),
                     "mem_request_mb": resources.mem_mb(mb), "predicted_device_mb": device_mb,
                     "used_device_mb": float(on_device[1]) if on_device else 0.0})
    frame = pd.DataFrame(rows)
    frame["time_ratio"] = frame["predicted_s"] / frame["used_s"]
    frame["mem_ratio"] = frame["predicted_mb"] / frame["used_mb"]
    frame["device_mem_ratio"] = frame["predicted_device_mb"] / frame["used_device_mb"]
    return frame


def fit(frame: pd.DataFrame) -> dict[str, float]:
    """Non-negative least squares on relative errors, over the jobs of one device: measure
    seconds = a + flops / R + elements x p + drawn numbers x r + block calls x c; train seconds
    = a + flops / R_train + layer steps x q (a shared); MB = B + k x graph pass MB + k_s x
    streamed pass MB (measure) or B + k_train x train MB (B shared). Returns the constants under
    resources.py's names, the seconds' under "speeds" (a resources.Speeds; its train constants
    the CPU's where the frame has no train job, and "trained": False)."""
    ones = np.ones(len(frame))
    time_terms = ["flops", "elements", "drawn", "calls", "train_flops", "layer_steps"]
    design = np.column_stack([ones, *(frame[c] for c in time_terms)])
    weight = 1 / frame["used_s"].to_numpy()
    # plain floats, so that the printed constants can be pasted into resources.py
    a, per_flop, per_element, per_number, per_call, per_train_flop, per_step = map(
        float, nnls(design * weight[:, None], ones)[0])
    mem = np.column_stack([ones, frame["graph_mb"], frame["stream_mb"], frame["train_mb"]])
    base, share, stream_share, train_share = nnls(mem / frame["used_mb"].to_numpy()[:, None],
                                                  ones)[0]
    trained = bool((frame["kind"] == "train").any())
    train_rate, per_step = ((1 / per_train_flop if per_train_flop else np.inf, per_step)
                            if trained else (resources.CPU.train_flops_per_s,
                                             resources.CPU.train_s_per_layer_step))
    speeds = resources.Speeds(
        startup_s=a, flops_per_s=1 / per_flop if per_flop else np.inf,
        probe_s_per_element=per_element, draw_s_per_number=per_number, call_s=per_call,
        train_flops_per_s=train_rate, train_s_per_layer_step=per_step)
    out = {"speeds": speeds, "trained": trained, "BASE_MB": base, "PASS_SHARE": share,
           "STREAM_SHARE": stream_share}
    if trained:
        out["TRAIN_SHARE"] = train_share
    return out


def figure(frame: pd.DataFrame, path: Path) -> None:
    """Predicted against measured seconds and MB, log-log, the 1x line and the 2x band."""
    fig, axes = plt.subplots(1, 2, figsize=(7.2, 3.4), constrained_layout=True)
    for ax, (pred, used, unit) in zip(axes, [("predicted_s", "used_s", "seconds on one core"),
                                             ("predicted_mb", "used_mb", "peak RSS (MB)")],
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
    fig.suptitle("Each job's predicted use (depthlab.planner.resources) against what it used")
    fig.savefig(path, dpi=200)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="RUN_DIR:config1.yaml,config2.yaml")
    parser.add_argument("--fit", action="store_true", help="print the fitted constants")
    parser.add_argument("--out", type=Path, default=ROOT / "results/benchmarks")
    args = parser.parse_args()
    runs = [(Path(d), c.split(",")) for d, c in (r.split(":", 1) for r in args.runs)]
    frame = pd.concat([jobs_used(d, c) for d, c in runs], ignore_index=True)
    report(frame, "with resources.py's constants")
    if args.fit:
        for device, jobs in frame.groupby("device"):
            constants = fit(jobs)
            resources.FITTED[device] = constants.pop("speeds")
            print(f"FITTED[{device!r}] = {resources.FITTED[device]}")
            if not constants.pop("trained"):
                print(f"  (no train job ran on {device}: its train constants are the CPU's)")
            if device != "cpu":  # a GPU job's host memory: the CPU's model
                continue
            for name, value in constants.items():
                print(f"{name} = {value:.4g}")
                setattr(resources, name, value)
        frame = pd.concat([jobs_used(d, c) for d, c in runs], ignore_index=True)
        report(frame, "with the fitted constants")
    args.out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out / "resources.csv", index=False)
    figure(frame, args.out / "resources.png")


def report(frame: pd.DataFrame, which: str) -> None:
    """Print, per device, the range of predicted over used, and how many jobs fall outside
    [0.5, 2]."""
    for device, jobs in frame.groupby("device"):
        for ratio in ("time_ratio", "mem_ratio") + (("device_mem_ratio",) * (device != "cpu")):
            outside = int(((jobs[ratio] < 0.5) | (jobs[ratio] > 2)).sum())
            print(f"{which}, {device}: {ratio} {jobs[ratio].min():.2f} to "
                  f"{jobs[ratio].max():.2f} over {len(jobs)} jobs; outside [0.5, 2]: {outside}")


if __name__ == "__main__":
    main()
