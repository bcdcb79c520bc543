"""nvcre: an open cluster readiness engine for GPU clusters on Kubernetes."""

API_GROUP = "nvcre.nvidia.com"
API_VERSION = "v1alpha1"
API_GROUP_VERSION = f"{API_GROUP}/{API_VERSION}"

__version__ = "0.1.0"
