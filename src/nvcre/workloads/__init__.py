"""Workload adapters: resolved categories to plain Kubernetes objects."""
