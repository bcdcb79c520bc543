"""Judging beyond the user's thresholds: shipped baselines, readiness stages, fleet-relative
outliers, per-node regressions and the node readiness ledger. Pure functions over plain
data; the controller calls them and writes what they return."""
