"""The controller's machinery, not its decisions: the operator loop, the work queue with
per-key backoff, the watch cache, Events and metrics. Reconcilers use it; decisions
(``nvcre.controller.decide``) never import it."""
