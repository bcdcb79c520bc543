"""Deterministic child names, so a restarted controller finds what it already made.

Names are a pure function of the parent's name and the child's role; a name too long
for its slot is cut and given a short FNV-1a hash of the full name, so two long
names that share a prefix still differ. The length budgets leave room for the
suffixes the next tier appends (``-job``, ``-workload``, pod suffixes).
"""

from __future__ import annotations

MAX_K8S_NAME = 63
MAX_WORKLOAD_NAME = 44
MAX_JOB_NAME = 35
MAX_WORKFLOW_NAME = 31


def fnv32a(text: str) -> int:
    value = 0x811C9DC5
    for byte in text.encode("utf-8"):
        value ^= byte
        value = (value * 0x01000193) & 0xFFFFFFFF
    return value


def short_hash(text: str) -> str:
    """Five hex characters of FNV-1a over the text."""
    return f"{fnv32a(text):05x}"[:5]


def truncate(name: str, limit: int) -> str:
    """``name`` if it fits, else its prefix plus ``-<hash5>`` of the full name."""
    if len(name) <= limit:
        return name
    prefix = name[: max(limit - 6, 1)].rstrip("-") or name[:1]
    return f"{prefix}-{short_hash(name)}"


def extract_hash(name: str) -> str:
    """The trailing 5-hex segment a truncated name carries, else a fresh hash of the name."""
    tail = name.rsplit("-", 1)[-1]
    if len(tail) == 5 and all(c in "0123456789abcdef" for c in tail):
        return tail
    return short_hash(name)


def options_suffix(options: dict | None) -> str:
    """Tokens that tell two runs of the same category with different options apart."""
    if not options:
        return ""
    tokens: list[str] = []
    if options.get("nodesPerJob") is not None:
        tokens.append(f"n{options['nodesPerJob']}")
    if options.get("enableMNNVL") is not None:
        tokens.append("mnnvl" if options["enableMNNVL"] else "nomnnvl")
    if options.get("testScale"):
        tokens.append(str(options["testScale"]))
    if options.get("enableCheckpoint"):
        tokens.append("ckpt")
    if options.get("maxSteps") is not None:
        tokens.append(f"s{options['maxSteps']}")
    if options.get("exitDurationMins") is not None:
        tokens.append(f"e{options['exitDurationMins']}")
    if options.get("gpusPerNode") is not None:
        tokens.append(f"g{options['gpusPerNode']}")
    return ("-" + "-".join(tokens)) if tokens else ""


def workflow_name(certification: str, domain: str, variant: str, options: dict | None = None) -> str:
    return truncate(f"{certification}-{domain}-{variant}{options_suffix(options)}", MAX_WORKFLOW_NAME)


def category_workflow_name(certification: str, categories: list[dict], index: int) -> str:
    """The Workflow name of ``categories[index]``: ``workflow_name``, plus a short hash of
    the options when an earlier category of the same domain/variant has the same name
    (options the suffix does not show differ), so each category runs as its own Workflow."""
    import json

    def base(cat: dict) -> str:
        return workflow_name(certification, cat.get("domain", ""), cat.get("variant", ""), cat.get("options"))

    category = categories[index]
    name = base(category)
    if not any(base(categories[j]) == name for j in range(index)):
        return name
    options = json.dumps(category.get("options") or {}, sort_keys=True)
    if any(json.dumps(categories[j].get("options") or {}, sort_keys=True) == options and base(categories[j]) == name
           for j in range(index)):
        options = f"{index}:{options}"  # an identical duplicate (refused by the CLI) still gets its own name
    tag = short_hash(options)
    return f"{truncate(name, MAX_WORKFLOW_NAME - len(tag) - 1)}-{tag}"


def job_name(workflow: str, group: str, iteration: int, *, single: bool) -> str:
    """``<wf>-job`` for a single group and iteration, else ``<wf>-<group>-iter-<n>``.

    When that is too long, the Workflow part is cut (it is the same for every sibling)
    and the group/iteration part kept whole, so thousands of sibling Jobs cannot collide
    on a 5-hex hash the way cutting the whole name would let them.
    """
    if single:
        return truncate(f"{workflow}-job", MAX_JOB_NAME)
    full = f"{workflow}-{group}-iter-{iteration}"
    if len(full) <= MAX_JOB_NAME:
        return full
    suffix = f"{group}-i{iteration}"
    if len(suffix) > MAX_JOB_NAME - 8:
        suffix = truncate(suffix, MAX_JOB_NAME - 8)
    return f"{truncate(workflow, MAX_JOB_NAME - len(suffix) - 1)}-{suffix}"


def workload_name(job: str) -> str:
    return truncate(f"{job}-workload", MAX_WORKLOAD_NAME)


def bandwidth_name(job: str) -> str:
    return truncate(f"{job}-bandwidth", MAX_K8S_NAME)


def goodput_name(job: str) -> str:
    return truncate(f"{job}-goodput", MAX_K8S_NAME)


def node_results_names(workflow_uid: str) -> tuple[str, str]:
    """(succeeded, failed) ConfigMap names of a Workflow."""
    short = (workflow_uid or "").replace("-", "")[:8] or "local"
    return f"succeeded-nodes-{short}", f"failed-nodes-{short}"
