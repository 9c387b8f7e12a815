"""The scale study: the notes' probes where their claims are asymptotic, at depths to 1024 and
widths to 1024 (docs/SCALE.md)."""
