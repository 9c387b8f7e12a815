"""Drawing one declared target (depthlab.pipeline.targets) from the fits of the arms it reads."""

from __future__ import annotations

from pathlib import Path

from depthlab.analysis.fits import read_fits
from depthlab.analysis.tables import write_table
from depthlab.pipeline.targets import Target


def render(target: Target, fit_paths: list[str | Path], options: dict,
           outputs: dict[str, str]) -> None:
    """Write the outputs of `target` (md+csv+html or png+svg): its function of the fits, with
    the study's `analysis:` options it declares."""
    result = target.function()(read_fits(fit_paths), **options)
    if target.kind == "table":
        write_table(result, outputs["md"], outputs["csv"], target.title, target.note,
                    outputs.get("html"))
    else:
        from depthlab.analysis.style import save  # matplotlib only for figures

        save(result, outputs["png"], outputs["svg"])
