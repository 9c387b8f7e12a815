"""What a rendered target is: a table or figure declared once, in its study's targets.py.

A declaration holds everything about a target: its rule name, description, title, caption, the
function that draws it (a name in the study's package, imported only when it is drawn) and the
arms whose fits it reads. The Snakemake render rules, `--list-target-rules`, the report captions
and the docs all come from it. Light on purpose (no heavy imports): the Snakefile reads the
declarations at parse time.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass

from depthlab.vocabulary import variants
from depthlab.vocabulary.variants import origin


@dataclass(frozen=True)
class Target:
    """One table or figure of a study.

    name:        the rule name, table_<stem> or fig_<stem> (outputs: results/tables/<stem>.* or
                 results/figures/<stem>.png|svg|pdf)
    description: one line, shown by `snakemake --list-target-rules`
    title:       the heading of a table's page (figures carry their own title)
    caption:     what is shown, in which units, from how many seeds (reST, the report's caption)
    draw:        '<module>:<function>' in the study's package; the function takes the fits of the
                 arms read (one frame) and the `options` below as keywords
    reads:       the arms whose fits it reads (fnmatch patterns, e.g. 'sens_*'), and the arms
                 split from their `block` axes ('grad@make_parallel' where it reads 'grad')
    needs:       patterns of `reads` that each must match an arm of the config for the target
                 to be built (its own data: the width figure's 'width_*'); () any one arm read
    at:          (run setting, value) pairs some cell of the arms it reads must have for the
                 target to be built (the fixes table at L = 192: (('depth', 192),))
    options:     keys of the study's `analysis:` config passed to the function
    note:        the line printed under a table (its estimator, in words)
    on_grid:     (option, setting) pairs: an `options` key whose value must be a value of that
                 run setting in the cells the target reads (checked before any job runs)
    per_placement: (title, caption) in place of `title` and `caption` where the fits read
                 hold placement keys other than Pre-LN alone (several placements, an own block:
                 depthlab.vocabulary.variants.per_placement), for a target whose `title` and
                 `caption` describe Pre-LN alone (the one placement the default configs measure
                 in the arms it reads); () keeps them whatever the fits hold
    study:       set by `declare`
    """

    name: str
    description: str
    draw: str
    reads: tuple[str, ...]
    caption: str
    needs: tuple[str, ...] = ()
    at: tuple[tuple[str, object], ...] = ()
    title: str = ""
    note: str = ""
    options: tuple[str, ...] = ()
    on_grid: tuple[tuple[str, str], ...] = ()
    per_placement: tuple[str, ...] = ()
    study: str = ""

    @property
    def kind(self) -> str:
        return "table" if self.name.startswith("table_") else "figure"

    @property
    def stem(self) -> str:
        return self.name.split("_", 1)[1]

    @property
    def outputs(self) -> dict[str, str]:
        """Output paths by extension: md+csv+html+tex for tables (html for the report, tex for
        a paper), png+svg+pdf for figures."""
        folder, exts = ("tables", ("md", "csv", "html", "tex")) if self.kind == "table" else (
            "figures", ("png", "svg", "pdf"))
        return {ext: f"results/{folder}/{self.stem}.{ext}" for ext in exts}

    def title_for(self, keys: Iterable[str]) -> str:
        """The title of the target drawn from fits of the placement keys `keys`: `title`, or
        `per_placement`'s where the keys are not Pre-LN alone."""
        return self.per_placement[0] if self._per_placement(keys) else self.title

    def caption_for(self, keys: Iterable[str]) -> str:
        """The caption of the target drawn from fits of the placement keys `keys`: `caption`,
        or `per_placement`'s where the keys are not Pre-LN alone."""
        return self.per_placement[1] if self._per_placement(keys) else self.caption

    def _per_placement(self, keys: Iterable[str]) -> bool:
        return bool(self.per_placement) and variants.per_placement(keys)

    def arms(self, configured, patterns: tuple[str, ...] | None = None) -> list[str]:
        """The arms among `configured` (the study's arm names) that this target reads (or
        that `patterns` match): those its patterns match, and those split from one of them
        (depthlab.vocabulary.variants.origin)."""
        return [a for a in configured
                if any(fnmatch.fnmatchcase(a, p) or fnmatch.fnmatchcase(origin(a), p)
                       for p in (self.reads if patterns is None else patterns))]

    def builds(self, configured) -> bool:
        """Whether a study with the arms `configured` builds this target: it reads one of them,
        and each pattern the target `needs` matches one."""
        return bool(self.arms(configured)) and all(self.arms(configured, (p,))
                                                   for p in self.needs)

    def off_grid(self, grid: dict[str, dict[str, set]]) -> str:
        """'' unless a (setting, value) of `at` is on no cell of the arms it reads (`grid`: the
        study's arm -> setting -> the values its cells take); then which, and the values
        there."""
        arms = self.arms(list(grid))
        for setting, value in self.at:
            values = sorted({v for arm in arms for v in grid[arm].get(setting, ())})
            if value not in values:
                return (f"{self.name}: the arms it reads ({', '.join(arms)}) have no cell at "
                        f"{setting}={value!r} ({setting}: {', '.join(map(str, values))})")
        return ""

    def unavailable(self, configured: dict[str, list[str]], configs: dict[str, dict],
                    grid: dict[str, dict] | None = None) -> str:
        """Why this config cannot build the target ('' if it can): its study, every arm it
        reads or an arm it needs is missing, naming the shipped config files (`configs`: name
        -> parsed YAML) whose study has them; or, with `grid` (study -> `off_grid`'s), a value
        it must be `at` is on none of its cells."""
        if self.study in configured and self.builds(configured[self.study]):
            return self.off_grid((grid or {}).get(self.study, {}))
        having = sorted(name for name, c in configs.items()
                        if self.builds(list(c.get("studies", {}).get(self.study, {})
                                            .get("arms", {}))))
        where = (f"; run it with --configfile {' or '.join(having)}" if having else "")
        return (f"{self.name}: this config has no arm {', '.join(self.needs or self.reads)} of "
                f"study '{self.study}'{where}")

def declare(study: str, *targets: Target) -> tuple[Target, ...]:
    """A study's targets, each tagged with the study."""
    return tuple(dataclasses.replace(t, study=study) for t in targets)
