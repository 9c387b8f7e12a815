"""One package per study: its targets (declared in targets.py, with its POSITION), fits, tables
and figures. A study is found by its package: every subpackage with a targets module is one, so
a new study is a new folder, listed nowhere else.

Studies never import each other; shared pieces live in depthlab.analysis and depthlab.core.
This module imports only the light target declarations (the Snakefile reads them at parse time).
"""

import importlib
import pkgutil

# each study's targets module, in the order of its POSITION
_DECLARED = sorted(
    (importlib.import_module(f"{__name__}.{info.name}.targets")
     for info in pkgutil.iter_modules(__path__) if info.ispkg),
    key=lambda module: module.POSITION)
TARGETS = tuple(t for module in _DECLARED for t in module.TARGETS)
BY_NAME = {t.name: t for t in TARGETS}
STUDIES = tuple(dict.fromkeys(t.study for t in TARGETS))  # the studies the pipeline fits
# each study's hook points its fit reads beyond the stream (its targets module's HOOK_POINTS):
# an own block it measures must mark them (depthlab_points), checked before any job
HOOK_POINTS = {module.TARGETS[0].study: tuple(getattr(module, "HOOK_POINTS", ()))
               for module in _DECLARED}


def drawing(target):
    """The function that draws a target (`draw` = 'module:function' of its study's package),
    imported on demand."""
    module, name = target.draw.split(":")
    return getattr(importlib.import_module(f"{__name__}.{target.study}.{module}"), name)
