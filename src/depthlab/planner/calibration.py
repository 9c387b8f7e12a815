"""Which arms are calibrated from which (config `calibrate_from`), checked at parse time; the
calibration itself is depthlab.core.calibrate."""

from __future__ import annotations

import dataclasses

from depthlab.vocabulary.jobs import Cell, Job
from depthlab.vocabulary.settings import ConfigError


def _held_out(cell: Cell) -> Cell:
    """A cell with its seed offset set to 0: a calibrated arm may measure other seeds than the
    run it is calibrated from (held-out seeds), nothing else may differ."""
    return dataclasses.replace(cell, settings=dataclasses.replace(cell.settings, seed_offset=0))


def calibrated_arms(config: dict, jobs: dict[tuple[str, str, str], Job]) -> dict:
    """(study, arm) -> the arm it is calibrated from, for every arm with `calibrate_from`.

    ConfigError unless the source arm exists in the same study, is Pre-LN with residual_scale 1
    (the layerwise scales replace it), is not calibrated itself, has the same jobs with the same
    cell settings but for seed_offset (the scales may be judged on held-out seeds), and the
    calibrated arm's name is used by no other study (the measure rule of calibrated arms is
    chosen by arm name)."""
    found = {}
    for study, spec in config["studies"].items():
        for arm, arm_spec in spec["arms"].items():
            if "calibrate_from" in arm_spec:
                found[(study, arm)] = arm_spec["calibrate_from"]
    for (study, arm), source in found.items():
        where = f"studies.{study}.arms.{arm}.calibrate_from"
        arms = config["studies"][study]["arms"]
        if source not in arms or (study, source) in found:
            raise ConfigError(f"{where}: '{source}' is not an uncalibrated arm of {study}")
        mine = {j: job for (s, a, j), job in jobs.items() if (s, a) == (study, arm)}
        theirs = {j: job for (s, a, j), job in jobs.items() if (s, a) == (study, source)}
        if mine.keys() != theirs.keys():
            raise ConfigError(f"{where}: '{source}' has jobs {sorted(theirs)}, not {sorted(mine)}")
        for job_id, job in mine.items():
            if [_held_out(c) for c in job.cells] != [_held_out(c) for c in theirs[job_id].cells]:
                raise ConfigError(f"{where}: cell settings of job {job_id} differ from "
                                  f"'{source}' (other than seed_offset)")
            for cell in job.cells:
                if cell.settings.placement != "pre" or cell.settings.residual_scale != 1:
                    raise ConfigError(
                        f"{where}: '{source}' must be Pre-LN with residual_scale 1 ({cell.label})"
                    )
        others = [s for s, spec in config["studies"].items() if s != study and arm in spec["arms"]]
        if others:
            raise ConfigError(f"{where}: arm name '{arm}' is also used by study {others[0]}")
    return found
