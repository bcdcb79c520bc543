"""The one place nvcre talks to the Kubernetes API server.

A thin layer over the official client's connection handling (kubeconfig, in-cluster
service account, TLS, bearer tokens) that speaks raw REST paths and returns plain
dicts, so every kind (ours, core, batch, Kubeflow) goes through the same few
verbs: get, list, create-if-absent, merge-patch, status update with conflict
retries, delete with a UID precondition, pod logs, access reviews and Events.
Every request is counted, because requests per Job is a budget we measure.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlencode

import kubernetes
import urllib3
from kubernetes.client import ApiClient, Configuration

from nvcre.errors import UserError
from nvcre.kube.resources import Resource, resource_for


class ApiError(Exception):
    """The API server answered with an error status."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def forbidden(self) -> bool:
        return self.status == 403

    @property
    def gone(self) -> bool:
        """410: a watch or list continuation asked for a resourceVersion etcd compacted away."""
        return self.status == 410


class TransportError(ConnectionError):
    """The API server could not be reached (refused, reset, timed out, TLS): no answer at all.

    The transport's own exceptions (urllib3) never leave ``nvcre.kube``; callers catch
    this (an OSError, like any other connection failure) instead.
    """


def now_rfc3339() -> str:
    """The current time the way Kubernetes writes timestamps."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def load_configuration(kubeconfig: str | None = None, context: str | None = None) -> Configuration:
    """Connection settings from a kubeconfig file, $KUBECONFIG, or the in-cluster service account."""
    config = Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG")
    try:
        if path:
            if not os.path.exists(path):
                raise UserError(f"kubeconfig {path!r} does not exist")
            kubernetes.config.load_kube_config(config_file=path, context=context, client_configuration=config)
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            kubernetes.config.load_incluster_config(client_configuration=config)
        else:
            default = os.path.expanduser("~/.kube/config")
            if not os.path.exists(default):
                raise UserError("no kubeconfig: pass --kubeconfig, set KUBECONFIG, or run inside a cluster")
            kubernetes.config.load_kube_config(config_file=default, context=context, client_configuration=config)
    except kubernetes.config.ConfigException as err:
        raise UserError(f"cannot load kubeconfig {path or '~/.kube/config'}: {err}") from err
    config.connection_pool_maxsize = 32  # worker threads and parallel Job creation share it
    return config


class KubeClient:
    """Plain-dict access to the API server, thread-safe, with request counting."""

    def __init__(self, configuration: Configuration, *, user_agent: str = "nvcre-controller") -> None:
        self.configuration = configuration
        self._api = ApiClient(configuration)
        self._api.user_agent = user_agent
        self._lock = threading.Lock()
        self.requests: Counter[str] = Counter()  # "VERB kind" -> count
        self.request_seconds: Counter[str] = Counter()  # "VERB kind" -> wall seconds spent waiting on them

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str | None = None, context: str | None = None) -> KubeClient:
        return cls(load_configuration(kubeconfig, context))

    @property
    def total_requests(self) -> int:
        with self._lock:
            return sum(self.requests.values())

    # ------------------------------------------------------------------ raw
    def _add_auth(self, headers: dict[str, str]) -> None:
        """The bearer token (refreshed by the configuration's hook for exec/OIDC auth), read
        the same way on every supported client version: update_params_for_auth changed its
        signature between them. Client certificates live in the connection pool."""
        bearer = (self.configuration.auth_settings() or {}).get("BearerToken") or {}
        if bearer.get("in") == "header" and bearer.get("value"):
            headers[bearer.get("key") or "authorization"] = bearer["value"]

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        raw: bool = False,
        counter_key: str | None = None,
        timeout: float | None = 60.0,
    ) -> Any:
        """One HTTP request; returns the decoded JSON (or text when raw), raises ApiError."""
        key = counter_key or f"{method} {path.rsplit('/', 1)[-1]}"
        with self._lock:
            self.requests[key] += 1
        started = time.monotonic()
        try:
            return self._request(method, path, query=query, body=body, content_type=content_type, raw=raw, timeout=timeout)
        finally:
            with self._lock:
                self.request_seconds[key] += time.monotonic() - started

    def _request(self, method: str, path: str, *, query: dict[str, Any] | None, body: Any, content_type: str,
                 raw: bool, timeout: float | None) -> Any:
        query = {k: v for k, v in (query or {}).items() if v is not None}
        url = self.configuration.host + path + ("?" + urlencode(query) if query else "")
        headers = {"Accept": "application/json, */*", "User-Agent": self._api.user_agent}
        if body is not None:
            headers["Content-Type"] = content_type
        self._add_auth(headers)
        payload = json.dumps(body) if body is not None else None
        try:
            response = self._api.rest_client.pool_manager.request(
                method, url, body=payload, headers=headers, timeout=timeout, preload_content=True
            )
        except urllib3.exceptions.HTTPError as err:
            raise TransportError(f"cannot reach the API server at {self.configuration.host}: {err}") from err
        data = response.data or b""
        if response.status >= 400:
            raise _api_error(response.status, data)
        if raw:
            return data.decode("utf-8", "replace")
        return json.loads(data) if data else {}

    # ------------------------------------------------------------------ reads
    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        """The object, or None when it does not exist."""
        res = resource_for(api_version, kind)
        try:
            return self.request("GET", res.item_path(name, namespace), counter_key=f"GET {kind}")
        except ApiError as err:
            if err.not_found:
                return None
            raise

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[dict]:
        """Every matching object (one request; the API server's default page size is unlimited)."""
        res = resource_for(api_version, kind)
        try:
            answer = self.request(
                "GET",
                res.collection_path(namespace),
                query={"labelSelector": label_selector, "fieldSelector": field_selector},
                counter_key=f"LIST {kind}",
            )
        except ApiError as err:
            if err.not_found:  # the kind is not installed (e.g. TrainJob)
                return []
            raise
        items = answer.get("items") or []
        for item in items:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        return items

    def list_page(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        limit: int = 500,
        continue_token: str | None = None,
    ) -> tuple[list[dict], str, str | None]:
        """One page of a paginated LIST: (items, the list's resourceVersion, continue token or None).

        The first page is a consistent read of the latest state; the continue token
        pins every later page to the same resourceVersion (410 Gone once compacted).
        """
        res = resource_for(api_version, kind)
        answer = self.request(
            "GET",
            res.collection_path(namespace),
            query={"labelSelector": label_selector, "limit": limit, "continue": continue_token},
            counter_key=f"LIST {kind}",
        )
        items = answer.get("items") or []
        for item in items:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        meta = answer.get("metadata") or {}
        return items, str(meta.get("resourceVersion") or ""), meta.get("continue") or None

    def watch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        resource_version: str,
        timeout_seconds: int = 300,
    ):
        """Yield watch events ``{"type", "object"}`` from ``resource_version`` until the server ends the stream.

        Bookmarks are asked for, so a quiet kind still moves its resourceVersion. An
        ERROR event is raised as ApiError (410 Gone: relist); transport failures as
        TransportError.
        """
        res = resource_for(api_version, kind)
        with self._lock:
            self.requests[f"WATCH {kind}"] += 1
        query = {
            "watch": "true",
            "labelSelector": label_selector,
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout_seconds,
        }
        url = self.configuration.host + res.collection_path(namespace) + "?" + urlencode({k: v for k, v in query.items() if v})
        headers = {"Accept": "application/json", "User-Agent": self._api.user_agent}
        self._add_auth(headers)
        try:
            response = self._api.rest_client.pool_manager.request(
                "GET", url, headers=headers, preload_content=False,
                timeout=urllib3.Timeout(connect=30.0, read=timeout_seconds + 30.0),
            )
        except urllib3.exceptions.HTTPError as err:
            raise TransportError(f"cannot watch {kind} at {self.configuration.host}: {err}") from err
        try:
            if response.status >= 400:
                raise _api_error(response.status, response.read())
            buffer = b""
            try:
                for chunk in response.stream(64 * 1024, decode_content=True):
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        if line.strip():
                            yield _watch_event(json.loads(line), api_version, kind)
            except urllib3.exceptions.HTTPError as err:
                raise TransportError(f"the {kind} watch broke: {err}") from err
        finally:
            response.release_conn()

    def kind_installed(self, api_version: str, kind: str) -> bool:
        """Whether the API server serves this kind (e.g. Kubeflow Trainer's TrainJob)."""
        res = resource_for(api_version, kind)
        root = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        try:
            answer = self.request("GET", root, counter_key="GET discovery")
        except ApiError as err:
            if err.not_found:
                return False
            raise
        return any(r.get("name") == res.plural for r in answer.get("resources", []))

    # ------------------------------------------------------------------ writes
    def create(self, obj: dict, namespace: str | None = None) -> tuple[dict, bool]:
        """Create the object unless one of that name exists; returns (object, created)."""
        res = _resource_of(obj)
        ns = namespace or obj.get("metadata", {}).get("namespace")
        try:
            return self.request("POST", res.collection_path(ns), body=obj, counter_key=f"CREATE {res.kind}"), True
        except ApiError as err:
            if not err.already_exists:
                raise
        existing = self.get(res.api_version, res.kind, obj["metadata"]["name"], ns)
        if existing is None:  # deleted between the two calls: try once more
            return self.request("POST", res.collection_path(ns), body=obj, counter_key=f"CREATE {res.kind}"), True
        return existing, False

    def apply(self, obj: dict, namespace: str | None = None, *, field_manager: str = "nvcrectl",
              dry_run: bool = False, force: bool = True) -> dict:
        """Server-side apply of ``obj``; with ``dry_run`` (``dryRun=All``) the API server runs
        every admission step (schema, CEL rules, admission policies) and persists nothing."""
        res = _resource_of(obj)
        ns = (namespace or obj.get("metadata", {}).get("namespace")) if res.namespaced else None
        query = {"fieldManager": field_manager, "force": "true" if force else None, "dryRun": "All" if dry_run else None}
        return self.request(
            "PATCH", res.item_path(obj["metadata"]["name"], ns), query=query, body=obj,
            content_type="application/apply-patch+yaml", counter_key=f"APPLY {res.kind}",
        )

    def merge_patch(self, api_version: str, kind: str, name: str, namespace: str | None, patch: dict) -> dict:
        res = resource_for(api_version, kind)
        return self.request(
            "PATCH",
            res.item_path(name, namespace),
            body=patch,
            content_type="application/merge-patch+json",
            counter_key=f"PATCH {kind}",
        )

    def update_status(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None,
        mutate: Callable[[dict], bool],
        *,
        current: dict | None = None,
        attempts: int = 8,
    ) -> dict | None:
        """Apply ``mutate`` to a fresh copy of the object and PUT its status subresource.

        ``mutate`` edits the object in place and returns whether anything changed;
        on a 409 conflict the object is re-read and ``mutate`` applied again, so the
        decision is always made on the latest state. Returns the written object, the
        unchanged one when there was nothing to write, or None if it is gone.
        """
        res = resource_for(api_version, kind)
        obj = current
        for attempt in range(attempts):
            if obj is None:
                obj = self.get(api_version, kind, name, namespace)
                if obj is None:
                    return None
            obj.setdefault("status", {})
            if not mutate(obj):
                return obj
            try:
                return self.request(
                    "PUT", res.item_path(name, namespace) + "/status", body=obj, counter_key=f"STATUS {kind}"
                )
            except ApiError as err:
                if err.not_found:
                    return None
                if not err.conflict or attempt == attempts - 1:
                    raise
                obj = None
                time.sleep(0.05 * (attempt + 1))
        return None

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        propagation: str = "Background",
    ) -> bool:
        """Delete (only the object with ``uid`` when given); True if a delete was issued."""
        res = resource_for(api_version, kind)
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            self.request("DELETE", res.item_path(name, namespace), body=body, counter_key=f"DELETE {kind}")
            return True
        except ApiError as err:
            if err.not_found or err.conflict:
                return False
            raise

    # ------------------------------------------------------------------ pods, access, events
    def pod_log(
        self,
        name: str,
        namespace: str,
        *,
        container: str | None = None,
        tail_lines: int | None = None,
        limit_bytes: int | None = None,
        timestamps: bool = False,
    ) -> str | None:
        """The container log through the API server (kubelet proxy), or None when unavailable.

        Bounded: a whole-log read takes the first ``LOG_HEAD_BYTES`` and, when the log
        is longer, its last ``LOG_TAIL_LINES`` lines (at most ``LOG_TAIL_BYTES``) after a
        marker line; a tail read takes at most ``LOG_TAIL_BYTES``.
        """
        from nvcre.measure.logtext import LOG_HEAD_BYTES, LOG_TAIL_BYTES, LOG_TAIL_LINES, join_head_tail

        if tail_lines is not None:
            return self._pod_log(name, namespace, container, tail_lines, min(limit_bytes or LOG_TAIL_BYTES, LOG_TAIL_BYTES),
                                 timestamps)
        head_limit = min(limit_bytes or LOG_HEAD_BYTES, LOG_HEAD_BYTES)
        head = self._pod_log(name, namespace, container, None, head_limit, timestamps)
        if head is None or limit_bytes is not None or len(head.encode("utf-8", errors="replace")) < head_limit:
            return head
        tail = self._pod_log(name, namespace, container, LOG_TAIL_LINES, LOG_TAIL_BYTES, timestamps)
        return join_head_tail(head, tail)

    def _pod_log(self, name: str, namespace: str, container: str | None, tail_lines: int | None,
                 limit_bytes: int | None, timestamps: bool) -> str | None:
        path = resource_for("v1", "Pod").item_path(name, namespace) + "/log"
        query = {
            "container": container,
            "tailLines": tail_lines,
            "limitBytes": limit_bytes,
            "timestamps": "true" if timestamps else None,
        }
        try:
            return self.request("GET", path, query=query, raw=True, counter_key="GET pods/log", timeout=120.0)
        except ApiError as err:
            if err.status in (400, 404, 500, 502, 503):
                return None
            raise

    def can_i(self, verb: str, resource: str, namespace: str, group: str = "") -> tuple[bool, str]:
        """A SelfSubjectAccessReview: may this identity do ``verb`` on ``resource`` in ``namespace``?"""
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"namespace": namespace, "verb": verb, "resource": resource, "group": group}},
        }
        answer = self.request(
            "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=review, counter_key="CREATE SSAR"
        )
        status = answer.get("status") or {}
        return bool(status.get("allowed")), status.get("reason") or ""

    def post_event(
        self,
        involved: dict,
        event_type: str,
        reason: str,
        message: str,
        *,
        component: str = "nvcre-controller",
    ) -> None:
        """Record a core/v1 Event on an object (shown by ``kubectl describe``)."""
        meta = involved.get("metadata", {})
        namespace = meta.get("namespace") or "default"
        stamp = now_rfc3339()
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta.get('name', 'object')}.", "namespace": namespace},
            "involvedObject": {
                "apiVersion": involved.get("apiVersion"),
                "kind": involved.get("kind"),
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "type": event_type,
            "reason": reason,
            "message": message,
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": os.environ.get("HOSTNAME", "local"),
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        self.request("POST", resource_for("v1", "Event").collection_path(namespace), body=event, counter_key="CREATE Event")


def _api_error(status: int, data: bytes) -> ApiError:
    reason, message = str(status), (data or b"").decode("utf-8", "replace")
    try:
        answer = json.loads(data)
        reason = answer.get("reason") or reason
        message = answer.get("message") or message
    except (ValueError, AttributeError):
        pass
    return ApiError(status, reason, message)


def _watch_event(event: dict, api_version: str, kind: str) -> dict:
    """A decoded watch line; an ERROR event (a Status object) becomes an ApiError."""
    obj = event.get("object") or {}
    if event.get("type") == "ERROR":
        raise ApiError(int(obj.get("code") or 500), obj.get("reason") or "Error", obj.get("message") or "watch error")
    obj.setdefault("apiVersion", api_version)
    obj.setdefault("kind", kind)
    return event


def _resource_of(obj: dict) -> Resource:
    try:
        return resource_for(obj["apiVersion"], obj["kind"])
    except KeyError as err:
        raise ValueError(f"object without apiVersion/kind: {obj.get('metadata', {}).get('name')}") from err
