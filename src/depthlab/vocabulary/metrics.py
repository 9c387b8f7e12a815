"""What a probe needs beyond the forward pass: the metrics a cell's rows hold only when its
settings ask for a backward pass (grad_of), the Jacobian probe (jacobian_dirs) or the update
probe (update_lr); the engine drops the others' rows and the planner shares cells by them."""

from __future__ import annotations

GRADIENT_METRICS = ("grad_norm", "grad_ratio")  # the probes that need a backward pass
JACOBIAN_METRICS = ("jacobian_rms_sv", "jacobian_max_sv")  # with jacobian_dirs
UPDATE_METRICS = ("model_update", "update_stream")  # with update_lr
