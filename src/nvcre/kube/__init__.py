"""The one place the product talks to the Kubernetes API server."""
