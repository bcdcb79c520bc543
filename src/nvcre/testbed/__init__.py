"""A real local Kubernetes control plane from pinned binaries (tests and the demo)."""
