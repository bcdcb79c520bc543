"""One reconcile entry point per kind (Job, Workflow, Certification, WorkloadRun, report
export) and the ledger a Workflow writes when it ends. Each gathers from the watch cache,
calls one pure decision (``nvcre.controller.decide``) and writes what it decided."""
