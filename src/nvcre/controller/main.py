"""Runtime wiring: build the context and reconcilers, install defaults, run the operator."""

from __future__ import annotations

import logging
import threading

from nvcre.controller import testhooks
from nvcre.controller.runtime.cache import WatchCache
from nvcre.controller.reconcilers.certification import reconcile_certification
from nvcre.controller.context import Context, Settings
from nvcre.controller.reconcilers.job import reconcile_job
from nvcre.controller.runtime.metrics import ControllerMetrics
from nvcre.controller.measurement import reconcile_bandwidth, reconcile_goodput
from nvcre.controller.runtime.operator import Controller, run
from nvcre.controller.reconcilers.report_export import ReportExporter, exports_of_source
from nvcre.controller.reconcilers.workflow import reconcile_workflow
from nvcre.controller.reconcilers.workloadrun import reconcile_workloadrun
from nvcre.kube.client import KubeClient

log = logging.getLogger(__name__)

RECONCILERS = {
    "Certification": reconcile_certification,
    "Workflow": reconcile_workflow,
    "Job": reconcile_job,
    "WorkloadRun": reconcile_workloadrun,
    "BandwidthMeasurement": reconcile_bandwidth,
    "GoodputMeasurement": reconcile_goodput,
}


def install_default_log_profiles(kube: KubeClient) -> list[str]:
    """Create the shipped LogProfiles that are missing; never overwrite a user's edit."""
    from nvcre.measure.logprofile import default_log_profiles

    created = []
    for profile in default_log_profiles():
        try:
            _, made = kube.create(profile)
        except Exception as err:  # the CRD may not be installed yet; the controller still runs
            log.warning("could not install LogProfile %s: %s", profile.get("metadata", {}).get("name"), err)
            continue
        if made:
            created.append(profile["metadata"]["name"])
    return created


def build(kubeconfig: str | None = None, settings: Settings | None = None) -> Controller:
    kube = KubeClient.from_kubeconfig(kubeconfig)
    settings = settings or Settings()
    cache = WatchCache()  # one store: the reconcilers read it, the metrics collectors project it
    metrics = ControllerMetrics(store=cache, node_detail_limit=settings.metrics_node_detail_limit,
                                reference_compatible=settings.reference_metrics)
    ctx = Context(kube=kube, settings=settings, metrics=metrics, cache=cache)
    ctx.metrics.count_requests(kube)
    reconcilers = dict(RECONCILERS)
    reconcilers["ReportExport"] = ReportExporter(ctx.settings.controller_namespace).reconcile
    return Controller(ctx, reconcilers, followers={"Certification": exports_of_source})


def serve(
    kubeconfig: str | None,
    *,
    namespaces: list[str] | None,
    metrics_port: int | None,
    metrics_address: str = "127.0.0.1",
    settings: Settings | None = None,
    stop_flag: threading.Event | None = None,
) -> None:
    testhooks.install()  # e2e fault hooks: inert unless their variable is set
    controller = build(kubeconfig, settings)
    installed = install_default_log_profiles(controller.ctx.kube)
    if installed:
        log.info("installed LogProfiles: %s", ", ".join(installed))
    from nvcre.controller.ledger import seed_store

    seed_store(controller.ctx)  # the node readiness gauge comes from the ledger, not from runs
    if metrics_port:
        bound = controller.ctx.metrics.serve(metrics_port, metrics_address)
        log.info("metrics on http://%s:%d/metrics", metrics_address, bound)
    run(controller, namespaces=namespaces, stop_flag=stop_flag)
