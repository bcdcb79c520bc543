"""Workload emulators: pure functions from a pod's command to the tool's real output."""
