"""Node-health detectors: CEL over whole Node objects."""
