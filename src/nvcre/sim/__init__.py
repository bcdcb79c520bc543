"""Simulated GPU fleet: Node objects, a fake kubelet, workload emulators, faults."""
