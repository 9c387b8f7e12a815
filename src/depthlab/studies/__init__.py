"""One package per study: its targets (declared in targets.py), fits, tables and figures.

Studies never import each other; shared pieces live in depthlab.analysis and depthlab.core.
This module imports only the light target declarations (the Snakefile reads them at parse time).
"""

from depthlab.studies.fixes.targets import TARGETS as _fixes
from depthlab.studies.fixestraining.targets import TARGETS as _fixestraining
from depthlab.studies.monitor.targets import TARGETS as _monitor
from depthlab.studies.scale.targets import TARGETS as _scale
from depthlab.studies.stack96.targets import TARGETS as _stack96
from depthlab.studies.theory096.targets import TARGETS as _theory096
from depthlab.studies.training.targets import TARGETS as _training
from depthlab.studies.varsplit.targets import TARGETS as _varsplit

# every target, in the order the notes present them; then the fixes study's (init, trained), then
# the scale study's
TARGETS = (*_stack96, *_theory096, *_monitor, *_training, *_varsplit, *_fixes, *_fixestraining,
           *_scale)
BY_NAME = {t.name: t for t in TARGETS}
STUDIES = tuple(dict.fromkeys(t.study for t in TARGETS))  # the studies the pipeline fits
