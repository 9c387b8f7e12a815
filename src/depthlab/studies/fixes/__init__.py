"""The fixes study (docs/FIXES.md): every placement of the registry on every probe of the notes, at
initialisation (its targets, fit, tables and figures); the trained runs are the fixestraining
study."""
