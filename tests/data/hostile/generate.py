"""Generate the hostile-manifest suite: valid objects of all five kinds with one field broken.

    python tests/data/hostile/generate.py      # rewrite tests/data/hostile/*.yaml

Each case is (kind, name, path in the object, hostile value, expected field, where).
The written file carries the header convention of tests/data/malformed: ``# expect:``
names the field the refusal must name, ``# server: no`` marks a case the API server's
schema cannot catch (the CLI and the controller refuse it: a detector that does not
compile, a duplicate YAML key, ConfigMap keys; identical duplicate categories are refused
by a CRD rule at ``spec.categories``, named in ``# server-field:``),
``# why:`` says what it attacks. CEL cost is refused by both: the API server by the
expression's shape (``nvcre.api.rules.CelShape``), the CLI by that and the estimator.
``tests/unit/api/test_hostile_manifests.py`` checks the CLI refuses every file naming
the field, ``tests/integration/test_hostile_manifests.py`` the API server.

The escalation class (``escalations()``) is valid to the schema and the CLI on purpose:
what it asks for is allowed to someone granted it. Those files say ``# expect:
(admission-policy)`` and ``# policy: <verb>``, the verb of the chart's least-privilege
ValidatingAdmissionPolicy a tenant needs for them (``privileged`` or ``escalate``);
``tests/unit/chart/test_hostile_escalations.py`` runs each through that policy, and the
integration test checks the schema admits them, so the policy is the line of defence.
"""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
API = "nvcre.nvidia.com/v1alpha1"

CERT = {
    "apiVersion": API, "kind": "Certification", "metadata": {"name": "hostile"},
    "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
             "categories": [{"domain": "communication", "variant": "nccl-all-reduce",
                             "options": {"thresholds": {"busBandwidthGBps": "value >= 900"}}}]},
}
RUN = {
    "apiVersion": API, "kind": "WorkloadRun", "metadata": {"name": "hostile"},
    "spec": {"image": "nvcr.io/nvidia/pytorch:26.01-py3", "numNodes": 2,
             "framework": {"mpi": {"binary": "/usr/local/bin/all_reduce_perf_mpi", "args": ["-b", "8"],
                                   "mpirunPath": "/usr/local/mpi/bin/mpirun"}},
             "bandwidthMeasurement": {"logProfileRef": "nccl-bandwidth", "testType": "all_reduce"}},
}
JOB_SPEC = {"workload": {"native": {"jobs": []}}, "timeoutPerJob": "1h", "thresholds": {"busBandwidthGBps": "value >= 1"}}
JOB = {"apiVersion": API, "kind": "Job", "metadata": {"name": "hostile"}, "spec": copy.deepcopy(JOB_SPEC)}
WORKFLOW = {
    "apiVersion": API, "kind": "Workflow", "metadata": {"name": "hostile"},
    "spec": {"jobTemplate": {"spec": copy.deepcopy(JOB_SPEC)},
             "orchestration": {"execution": {"maxConcurrent": 0, "timeoutPerJob": "1h"}, "iterations": 1}},
}
LOGPROFILE = {
    "apiVersion": API, "kind": "LogProfile", "metadata": {"name": "hostile"},
    "spec": {"timestamp": {"layout": "2006-01-02T15:04:05Z07:00"},
             "patterns": {"trainingStep": {"regex": r"iteration\s+(?P<iteration>\d+)", "example": "iteration 5"}}},
}
BASES = {"cert": CERT, "run": RUN, "job": JOB, "wf": WORKFLOW, "lp": LOGPROFILE}

NESTED_CEL = ("[1,2,3,4,5,6,7,8,9,10].map(a,[1,2,3,4,5,6,7,8,9,10].map(b,[1,2,3,4,5,6,7,8,9,10].map(c,"
              "[1,2,3,4,5,6,7,8,9,10].map(d,[1,2,3,4,5,6,7,8,9,10].map(f,a+b+c+d+f))))).size() > 0")
# The same class, written so a naive count would miss it, or built from what a Node holds.
SPACED_MACROS = "[1,2,3].map (a, [1,2,3] .\n map(b, [1,2,3]. map(c, a+b+c))).size() > 0"
DEEP_PARENS = "(" * 60 + "value" + ")" * 60 + " > 1"
LONG_LITERAL = "[" + ",".join(str(i) for i in range(100)) + "].exists(x, value >= x)"
TWO_MACROS = "[1,2].exists(a, value > a) && [3,4].all(b, value < b * 1000)"
NESTED_NODE = ("node.status.conditions.exists(a, node.status.conditions.exists(b, "
               "node.status.conditions.exists(c, a.type == b.type && b.type == c.type && c.status == 'False')))")


def _map_value(field: str) -> str:
    """The API server names a map value as ``map[key]``, not ``map.key``."""
    parent, key = field.rsplit(".", 1)
    return f"{parent}[{key}]"


RESERVED_ENV = ["LD_PRELOAD", "PATH", "LD_LIBRARY_PATH", "OMPI_MCA_orte_default_hostfile", "PET_MASTER_ADDR",
                "PMIX_SERVER_URI", "NVCRE_TOKEN", "MASTER_ADDR", "BASH_ENV", "HOME"]
BAD_DURATIONS = ["0s", "99999999999999999999h", "721h", "-5s", "1d", "5", "1h 30m", "0ms"]


def cases() -> list[tuple[str, str, tuple, object, str, bool, str]]:
    """(base, slug, path, value, expected field, server refuses, why)."""
    out: list[tuple[str, str, tuple, object, str, bool, str]] = []
    opt = ("spec", "categories", 0, "options")

    def add(base, slug, path, value, field, server=True, why=""):
        out.append((base, slug, path, value, field, server, why))
    # server: True (the API server names ``field``), False (CLI/controller only), or the
    # field the API server names instead (a CEL evaluation error is reported at the
    # object holding the rule), or "(kubectl)" when kubectl refuses before sending.

    # Certification: every class of the issue, per option.
    for d in BAD_DURATIONS:
        add("cert", f"timeout-{d}", opt + ("timeoutPerJob",), d, "spec.categories[0].options.timeoutPerJob",
            why="a duration outside 1s..720h (0s reports every node failed; a huge one runs forever)")
    for d in BAD_DURATIONS[:4]:
        add("cert", f"measurement-timeout-{d}", opt + ("measurementTimeout",), d,
            "spec.categories[0].options.measurementTimeout", why="duration bounds")
    for key, value in [("gpusPerNode", 100000), ("gpusPerNode", 0), ("gpusPerNode", "4"), ("mlnxPerNode", 1000),
                       ("mlnxPerNode", -1), ("repeatCount", 10**6), ("nodesPerJob", 0), ("nodesPerJob", "8"),
                       ("maxConcurrent", -1), ("numIterations", 0), ("gpusPerNode", 4.5), ("maxSteps", -2)]:
        add("cert", f"{key}-{value}", opt + (key,), value, f"spec.categories[0].options.{key}",
            why="a count out of bounds or of the wrong type")
    for key, value in [("enableMNNVL", "yes"), ("enableCheckpoint", "true"), ("isolateFailures", 1)]:
        add("cert", f"{key}-{value}", opt + (key,), value, f"spec.categories[0].options.{key}",
            why="a string or number where the API server wants a bool")
    for name in RESERVED_ENV:
        add("cert", f"env-{name}", opt + ("env",), [{"name": name, "value": "x"}],
            "spec.categories[0].options.env[0].name", why="a reserved environment variable")
    for name in ["Bad Class!", "UPPER", "-lead", "a" * 300, "../x"]:
        add("cert", f"storage-class-{name[:12]}", opt + ("storageClassName",), name,
            "spec.categories[0].options.storageClassName", why="storage class name must be a DNS subdomain")
    for size in ["10Zi", "ten", "-1Gi", "1e3Gi"]:
        add("cert", f"storage-size-{size}", opt + ("storageSize",), size, "spec.categories[0].options.storageSize",
            why="storage size pattern")
    cert_thr = "spec.categories[0].options.thresholds.busBandwidthGBps"
    add("cert", "threshold-nested-cel", opt + ("thresholds",), {"busBandwidthGBps": NESTED_CEL}, cert_thr,
        server=_map_value(cert_thr), why="a CEL threshold whose estimated cost is over the limit (seconds to evaluate)")
    add("cert", "threshold-deep-parens", opt + ("thresholds",), {"busBandwidthGBps": DEEP_PARENS}, cert_thr,
        server=_map_value(cert_thr), why="nesting depth (opening brackets)")
    add("cert", "threshold-spaced-macros", opt + ("thresholds",), {"busBandwidthGBps": SPACED_MACROS}, cert_thr,
        server=_map_value(cert_thr), why="nested comprehensions written with spaces and newlines around the dot")
    add("cert", "threshold-long-literal", opt + ("thresholds",), {"busBandwidthGBps": LONG_LITERAL}, cert_thr,
        server=_map_value(cert_thr), why="a literal list too long for a comprehension to walk cheaply (commas)")
    add("cert", "threshold-unknown-key", opt + ("thresholds",), {"bogus": "value > 1"},
        "spec.categories[0].options.thresholds", why="unknown threshold key")
    add("cert", "duplicate-category", ("spec", "categories"), CERT["spec"]["categories"] * 2,
        "spec.categories[1]", server="spec.categories", why="identical duplicate categories")
    add("cert", "duplicate-category-alias", ("spec", "categories"),
        [{"domain": "communication", "variant": "nccl-alltoall"}, {"domain": "communication", "variant": "nccl-all-to-all"}],
        "spec.categories[1]", server="spec.categories",
        why="the same category twice, once by its catalog alias (nccl-all-to-all is nccl-alltoall)")
    add("cert", "labels-reserved", opt + ("workloadMetadata",), {"labels": {"nvcre.nvidia.com/job": "x"}},
        "spec.categories[0].options.workloadMetadata.labels", why="reserved label key")
    add("cert", "target-names-type", ("spec", "target", "nodeNames"), "gpu-node-1", "spec.target.nodeNames",
        why="a string where a list is wanted")
    add("cert", "name-traversal", ("metadata", "name"), "../../etc/passwd", "metadata.name",
        server="(kubectl)", why="object names are DNS subdomains")

    # WorkloadRun.
    for name in RESERVED_ENV:
        add("run", f"env-{name}", ("spec", "env"), [{"name": name, "value": "x"}], "spec.env[0].name",
            why="a reserved environment variable")
    for key in ["../../etc/passwd", "a/b", "..hidden", ".", "x" * 300, "sp ace"]:
        add("run", f"config-key-{key[:10]}", ("spec", "config"), {"inline": {key: "data"}}, "spec.config.inline",
            server=False, why="a ConfigMap key is a file name, never a path")
    for name in ["../../etc/passwd", "Upper", "a_b"]:
        add("run", f"config-ref-{name[:10]}", ("spec", "config"), {"configMapRef": {"name": name}},
            "spec.config.configMapRef.name", why="a ConfigMap name is a DNS subdomain")
    for vol in ["dshm", "config-volume", "mpi-ssh", "nvcre-run", "checkpoints"]:
        add("run", f"volume-{vol}", ("spec", "volumes"), [{"name": vol, "emptyDir": {}}], "spec.volumes",
            why="a volume name the workload adds itself")
    for path in ["/dev/shm", "/config", "/etc/mpi", "/run/nvcre"]:
        add("run", f"mount-{path.strip('/').replace('/', '-')}", ("spec", "volumeMounts"),
            [{"name": "data", "mountPath": path}], "spec.volumeMounts", why="a mount path the workload uses")
    for d in BAD_DURATIONS[:4]:
        add("run", f"timeout-{d}", ("spec", "orchestration"), {"timeoutPerJob": d},
            "spec.orchestration.timeoutPerJob", why="duration bounds")
    for key, value in [("gpusPerNode", 100000), ("gpusPerNode", "8"), ("numNodes", "2"), ("numNodes", 0),
                       ("mlnxPerNode", 65), ("enableMNNVL", "no")]:
        add("run", f"{key}-{value}", ("spec", key), value, f"spec.{key}", why="bounds and types")
    add("run", "checkpoint-storage-class", ("spec", "checkpoint"), {"storageSize": "1Ti", "storageClassName": "Bad!"},
        "spec.checkpoint.storageClassName", why="storage class pattern")
    add("run", "threshold-nested-cel", ("spec", "thresholds"), {"busBandwidthGBps": NESTED_CEL},
        "spec.thresholds.busBandwidthGBps", server=_map_value("spec.thresholds.busBandwidthGBps"), why="CEL cost")

    # Job.
    for d in BAD_DURATIONS[:5]:
        add("job", f"timeout-{d}", ("spec", "timeoutPerJob"), d, "spec.timeoutPerJob", why="duration bounds")
    add("job", "measurement-timeout-0s", ("spec", "measurementTimeout"), "0s", "spec.measurementTimeout", why="bounds")
    add("job", "health-nested-cel", ("spec", "nodeHealthMonitor"), {"cel": {"expression": NESTED_CEL}},
        "spec.nodeHealthMonitor.cel.expression", why="a node-health detector over the cost limit")
    add("job", "health-nested-node-lists", ("spec", "nodeHealthMonitor"), {"cel": {"expression": NESTED_NODE}},
        "spec.nodeHealthMonitor.cel.expression", why="three comprehensions nested over a Node's lists")
    add("job", "health-deep-parens", ("spec", "nodeHealthMonitor"),
        {"cel": {"expression": "(" * 70 + "node.spec.unschedulable" + ")" * 70}},
        "spec.nodeHealthMonitor.cel.expression", why="nesting depth (opening brackets)")
    add("job", "health-bad-cel", ("spec", "nodeHealthMonitor"), {"cel": {"expression": "node.spec.("}},
        "spec.nodeHealthMonitor.cel.expression", server=False, why="a detector that does not compile")
    add("job", "threshold-nested-cel", ("spec", "thresholds"), {"busBandwidthGBps": NESTED_CEL},
        "spec.thresholds.busBandwidthGBps", server=_map_value("spec.thresholds.busBandwidthGBps"), why="CEL cost")
    add("job", "threshold-two-macros", ("spec", "thresholds"), {"busBandwidthGBps": TWO_MACROS},
        "spec.thresholds.busBandwidthGBps", server=_map_value("spec.thresholds.busBandwidthGBps"),
        why="a threshold over one number needs at most one comprehension")
    add("job", "stall-multiplier-str", ("spec", "stallMultiplier"), "3", "spec.stallMultiplier", why="type")
    add("job", "grace-zero", ("spec", "schedulingStallGraceSeconds"), 0, "spec.schedulingStallGraceSeconds",
        why="bounds")
    add("job", "two-workloads", ("spec", "workload"), {"native": {}, "trainJob": {}}, "spec.workload",
        why="exactly one workload kind")
    add("job", "nodes-not-list", ("spec", "nodes"), "gpu-node-1", "spec.nodes", why="type")
    add("job", "sample-interval-0s", ("spec", "bandwidthMeasurement"), {"logProfileRef": "nccl-bandwidth",
        "sampleInterval": "0s"}, "spec.bandwidthMeasurement.sampleInterval", why="duration bounds")

    # Workflow.
    ex = ("spec", "orchestration", "execution")
    for d in BAD_DURATIONS[:5]:
        add("wf", f"timeout-{d}", ex + ("timeoutPerJob",), d, "spec.orchestration.execution.timeoutPerJob",
            why="duration bounds")
    add("wf", "max-concurrent-neg", ex + ("maxConcurrent",), -1, "spec.orchestration.execution.maxConcurrent",
        why="bounds")
    add("wf", "max-concurrent-str", ex + ("maxConcurrent",), "4", "spec.orchestration.execution.maxConcurrent",
        why="type")
    add("wf", "iterations-zero", ("spec", "orchestration", "iterations"), 0, "spec.orchestration.iterations",
        why="bounds")
    add("wf", "isolate-yes", ("spec", "orchestration", "isolateFailures"), "yes", "spec.orchestration.isolateFailures",
        why="type")
    add("wf", "job-timeout-huge", ("spec", "jobTemplate", "spec", "timeoutPerJob"), "99999999999999999999h",
        "spec.jobTemplate.spec.timeoutPerJob", why="duration bounds")
    add("wf", "job-health-nested-cel", ("spec", "jobTemplate", "spec", "nodeHealthMonitor"),
        {"cel": {"expression": NESTED_CEL}}, "spec.jobTemplate.spec.nodeHealthMonitor.cel.expression",
        why="CEL cost")
    add("wf", "job-threshold-nested-cel", ("spec", "jobTemplate", "spec", "thresholds"),
        {"busBandwidthGBps": NESTED_CEL}, "spec.jobTemplate.spec.thresholds.busBandwidthGBps",
        server=_map_value("spec.jobTemplate.spec.thresholds.busBandwidthGBps"), why="CEL cost")
    add("wf", "nodes-per-job-zero", ("spec", "orchestration", "nodesPerJob"), 0, "spec.orchestration.nodesPerJob",
        why="bounds")

    # LogProfile: regexes RE2 cannot express (the API server's CEL matches() is RE2 too).
    step = ("spec", "patterns", "trainingStep")
    for slug, regex in [("lookahead", r"(?P<iteration>\d+)(?=ms)"), ("lookbehind", r"(?<=it )(?P<iteration>\d+)"),
                        ("backreference", r"(?P<iteration>\d+) \1"), ("possessive", r"(?P<iteration>\d++)"),
                        ("end-Z", r"(?P<iteration>\d+)\Z"), ("named-backref", r"(?P<iteration>\d+)(?P=iteration)"),
                        ("verbose", r"(?x) (?P<iteration> \d+ )"), ("huge-repeat", r"(?P<iteration>\d{2000})"),
                        ("unbalanced", r"(?P<iteration>\d+"), ("atomic", r"(?>(?P<iteration>\d+))")]:
        add("lp", f"regex-{slug}", step, {"regex": regex}, "spec.patterns.trainingStep.regex",
            server="spec.patterns.trainingStep", why="a regex RE2 cannot compile (backtracking-only syntax)")
    add("lp", "example-mismatch", step, {"regex": r"iteration (?P<iteration>\d+)", "example": "step 5"},
        "spec.patterns.trainingStep.example", why="example must match")
    add("lp", "regex-too-long", step, {"regex": "a" * 5000}, "spec.patterns.trainingStep.regex", why="length")
    add("lp", "units-bad", step, {"regex": r"(?P<iteration>\d+) (?P<stepTiming>\d+)", "units": {"stepTiming": "h"}},
        "spec.patterns.trainingStep.units.stepTiming", why="unit")
    add("lp", "worker-type", ("spec", "workerStrategy"), {"type": "Many"}, "spec.workerStrategy.type", why="enum")
    add("lp", "warmup-str", ("spec", "warmupSteps"), "5", "spec.warmupSteps", why="type")
    add("lp", "interval-zero", ("spec", "logInterval"), 0, "spec.logInterval", why="bounds")
    add("lp", "unknown-pattern", ("spec", "patterns", "bogus"), {"regex": "x"}, "spec.patterns.bogus",
        why="unknown pattern name")
    add("lp", "timestamp-missing", ("spec", "timestamp"), None, "spec.timestamp", why="required")
    return out


PLAIN_POD = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36", "command": ["true"]}]}


def _native_job(pod: dict | None = None, *extra: dict) -> dict:
    """A native workload: one plain batch/v1 Job running ``pod`` (plain unless changed), plus ``extra`` objects."""
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "w"},
           "spec": {"template": {"spec": copy.deepcopy(pod or PLAIN_POD)}}}
    return {"native": {"objects": [job, *extra]}}


def _pod(**changes: object) -> dict:
    pod = copy.deepcopy(PLAIN_POD)
    for key, value in changes.items():
        if key.startswith("main_"):
            pod["containers"][0][key[5:]] = value
        else:
            pod[key] = value
    return pod


def escalations() -> list[tuple[str, str, tuple, object, str, str]]:
    """(base, slug, path, value, policy verb, why): objects the schema admits that would make
    the controller create more than a plain namespaced workload with its own rights."""
    work = ("spec", "workload")
    owner = {"apiVersion": API, "kind": "WorkloadRun", "name": "someone-elses-run", "uid": "0b8f-run"}
    return [
        ("job", "privileged-container", work, _native_job(_pod(main_securityContext={"privileged": True})),
         "privileged", "a privileged container"),
        ("job", "host-pid", work, _native_job(_pod(hostPID=True)), "privileged", "the node's process namespace"),
        ("job", "host-network", work, _native_job(_pod(hostNetwork=True)), "privileged", "the node's network"),
        ("job", "host-path-root", work,
         _native_job(_pod(volumes=[{"name": "root", "hostPath": {"path": "/"}}],
                          main_volumeMounts=[{"name": "root", "mountPath": "/host"}])),
         "privileged", "the node's root filesystem"),
        ("job", "apparmor-unconfined", work,
         _native_job(_pod(main_securityContext={"appArmorProfile": {"type": "Unconfined"}})),
         "privileged", "AppArmor switched off (Pod Security baseline)"),
        ("job", "selinux-custom-type", work,
         _native_job(_pod(securityContext={"seLinuxOptions": {"type": "spc_t"}})),
         "privileged", "a custom SELinux type (spc_t is unconfined; Pod Security baseline)"),
        ("job", "unsafe-sysctl", work,
         _native_job(_pod(securityContext={"sysctls": [{"name": "kernel.core_pattern", "value": "|/tmp/x"}]})),
         "privileged", "a sysctl outside the Pod Security baseline's safe set"),
        ("job", "secret-object", work,
         _native_job(None, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                            "stringData": {"token": "x"}}),
         "escalate", "a Secret created with the controller's rights"),
        ("job", "secret-env", work,
         _native_job(_pod(main_env=[{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "db", "key": "k"}}}])),
         "escalate", "another workload's Secret read into the environment"),
        ("job", "secret-volume", work,
         _native_job(_pod(volumes=[{"name": "s", "secret": {"secretName": "db"}}])),
         "escalate", "another workload's Secret mounted"),
        ("job", "rbac-role-binding", work,
         _native_job(None, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                            "metadata": {"name": "x"},
                            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
                            "subjects": [{"kind": "User", "name": "mallory"}]}),
         "escalate", "RBAC granted with the controller's rights"),
        ("job", "cluster-scoped-namespace", work,
         _native_job(None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}),
         "escalate", "a cluster-scoped object"),
        ("job", "raw-trainjob", work,
         {"trainJob": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"image": "busybox:1.36"}}},
         "escalate", "a raw TrainJob spec (its runtime cannot be checked at admission)"),
        ("wf", "bound-to-run-owner", ("metadata", "ownerReferences"), [owner],
         "escalate", "a Workflow owned by another user's WorkloadRun re-runs its workload"),
        ("wf", "bound-to-run-label", ("metadata", "labels"), {"nvcre.nvidia.com/workload-run": "someone-elses-run"},
         "escalate", "a Workflow labelled into another user's WorkloadRun re-runs its workload"),
        ("run", "host-path-volume", ("spec", "volumes"), [{"name": "root", "hostPath": {"path": "/"}}],
         "privileged", "a WorkloadRun mounting the node's root filesystem"),
        ("run", "privileged-init", ("spec", "initContainers"),
         [{"name": "init", "image": "busybox:1.36", "securityContext": {"privileged": True}}],
         "privileged", "a privileged init container"),
        ("run", "secret-volume", ("spec", "volumes"), [{"name": "s", "secret": {"secretName": "db"}}],
         "escalate", "a WorkloadRun mounting a Secret"),
    ]


def _set(obj: dict, path: tuple, value: object) -> dict:
    current = obj
    for part in path[:-1]:
        if isinstance(current, dict):
            current = current.setdefault(part, {})
        else:
            current = current[part]
    if value is None and isinstance(current, dict):
        current.pop(path[-1], None)
    else:
        current[path[-1]] = value
    return obj


def _slug(text: str) -> str:
    out = "".join(c if c.isalnum() or c == "-" else "-" for c in text.lower())
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-")[:60]


def render() -> dict[str, str]:
    files: dict[str, str] = {}
    for base, slug, path, value, field, server, why in cases():
        obj = _set(copy.deepcopy(BASES[base]), path, copy.deepcopy(value))
        name = f"{base}-{_slug(slug)}"
        if path[:2] != ("metadata", "name"):
            obj["metadata"]["name"] = name[:63].rstrip("-")
        marker = "" if server is True else "# server: no\n" if server is False else f"# server-field: {server}\n"
        header = f"# expect: {field}\n" + marker + f"# why: {why}\n"
        files[f"{name}.yaml"] = header + yaml.safe_dump(obj, sort_keys=False, width=200)
    for base, slug, path, value, verb, why in escalations():
        obj = _set(copy.deepcopy(BASES[base]), path, copy.deepcopy(value))
        name = f"{base}-escalate-{_slug(slug)}"
        obj["metadata"]["name"] = name[:63].rstrip("-")
        header = f"# expect: (admission-policy)\n# policy: {verb}\n# why: {why}\n"
        files[f"{name}.yaml"] = header + yaml.safe_dump(obj, sort_keys=False, width=200)
    # A duplicate YAML key: the last value would win silently (hand-written: YAML cannot dump it).
    files["cert-duplicate-yaml-key.yaml"] = (
        "# expect: (document)\n# server: no\n# why: a key given twice; the CLI refuses, YAML would keep the last\n"
        f"apiVersion: {API}\nkind: Certification\nmetadata:\n  name: cert-duplicate-yaml-key\nspec:\n"
        "  target:\n    nodeSelector:\n      nvidia.com/gpu.present: 'true'\n"  # valid but for the key: the server admits it
        "  categories:\n  - domain: communication\n    variant: nccl-all-reduce\n    variant: nccl-all-gather\n"
    )
    return files


def main() -> None:
    for old in HERE.glob("*.yaml"):
        old.unlink()
    files = render()
    for name, text in files.items():
        (HERE / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} hostile manifests to {HERE}")


if __name__ == "__main__":
    main()
