"""Drawing one declared target (depthlab.vocabulary.targets) from the fits of the arms it reads."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from depthlab.analysis.fits import read_fits
from depthlab.analysis.tables import write_table
from depthlab.vocabulary.targets import Target
from depthlab.vocabulary.variants import with_blocks

log = logging.getLogger(__name__)


def draw(target: Target, function: Callable, fit_paths: list[str | Path], options: dict,
         outputs: dict[str, str], blocks: dict[str, str] | None = None) -> None:
    """Write the outputs of `target` (md+csv+html+tex or png+svg+pdf): `function` (its study's,
    depthlab.studies.drawing) of the fits, with the study's `analysis:` options it declares;
    the rows of each arm of an own block (`blocks`: arm -> module:function) under the block's
    own placement key (depthlab.vocabulary.variants.with_blocks), never the built-in's; a
    table titled for the placement keys its fits hold (Target.title_for); a figure checked
    before it is written (depthlab.analysis.legibility: a warning in the log per problem)."""
    fits = with_blocks(read_fits(fit_paths), blocks)
    result = function(fits, **options)
    if target.kind == "table":
        keys = fits["placement"].dropna().unique() if "placement" in fits else ()
        write_table(result, outputs["md"], outputs["csv"], target.title_for(keys), target.note,
                    outputs.get("html"), outputs.get("tex"))
    else:  # matplotlib only for figures
        from depthlab.analysis.legibility import problems
        from depthlab.analysis.style import finish, write

        finish(result)
        try:
            found = problems(result, fits)
        except Exception as error:  # a fault of the checks never keeps a figure from its files
            found = [f"the checks failed ({type(error).__name__}: {error})"]
        for line in found:
            log.warning("%s does not read well: %s", target.name, line)
        if not found:
            log.info("%s reads well: %d panels checked", target.name, len(result.axes))
        write(result, outputs)


def contact_sheet(pngs: list[str | Path], out: str | Path, columns: int = 4,
                  thumb_px: int = 900) -> None:
    """Every figure of a run as a thumbnail (at most `thumb_px` wide or high) under its name,
    `columns` to a row, on one PNG page."""
    import numpy as np
    from PIL import Image

    from depthlab.analysis.style import grid, save

    rows = -(-len(pngs) // columns)
    fig, axes = grid(rows, columns, 3.0, 2.4)
    for ax in axes.flat:
        ax.set_axis_off()
    for ax, path in zip(axes.flat, pngs, strict=False):
        with Image.open(path) as image:
            image.thumbnail((thumb_px, thumb_px))
            ax.imshow(np.asarray(image.convert("RGB")))
        ax.set_title(Path(path).stem, fontsize=7)
    save(fig, {"png": out})
