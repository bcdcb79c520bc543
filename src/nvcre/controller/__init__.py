"""The controller process: reconcilers for every kind, events and metrics."""
