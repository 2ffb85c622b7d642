"""Values in the cluster section that stand for the reader's own: documentation address ranges, AWS's
documentation accounts and GCP project IDs no project can have. A shipped starter stack carries them until it is
edited (``starter-aws``: the network the API answers and the admin role; ``starter-gcp``: the project and the
network). EKS and GKE accept the ranges and accounts, and the cluster would come up reachable by nobody and
administered by nobody, so ``pulumi up`` refuses them (``components/cli/config.py``); a preview and the offline
tools only warn, so the stack still renders and can be looked at before it is edited.

Pure: no pulumi, no cloud SDK.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from typing import Any

from ..spec.model import Problem, StackSpec, key

# RFC 5737 section 3 (TEST-NET-1..3): reserved for documentation, routed nowhere. (The stack file's CIDRs are IPv4.)
DOCUMENTATION_NETWORKS = tuple(ipaddress.IPv4Network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))
# The account IDs the AWS documentation writes in example ARNs (IAM user guide "IAM identifiers", the EKS user
# guide's access entries); no customer holds them.
EXAMPLE_ACCOUNTS = frozenset({"111122223333", "123456789012", "444455556666", "777788889999"})
# Strings no GCP project ID may contain ("Creating and managing projects", project ID requirements: "cannot contain
# restricted strings, such as google, null, undefined, and ssl"): a project ID holding one is nobody's project.
RESTRICTED_PROJECT_WORDS = ("google", "null", "undefined", "ssl")
_ARN_ACCOUNT = re.compile(r"^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:(\d{12}):")


def _walk(value: Any, path: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if isinstance(value, dict):
        for k in value:
            yield from _walk(value[k], (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, (*path, i))
    elif isinstance(value, str):
        yield path, value


def _documentation_network(text: str) -> ipaddress.IPv4Network | None:
    try:
        net = ipaddress.IPv4Network(text, strict=False)
    except ValueError:
        return None
    return next((d for d in DOCUMENTATION_NETWORKS if net.subnet_of(d)), None)


def problems(spec: StackSpec) -> list[Problem]:
    """Every placeholder of the cluster section, with its key path and what to put there instead."""
    out = []
    project = spec.cluster.project or ""
    word = next((w for w in RESTRICTED_PROJECT_WORDS if w in project), None)
    if spec.cloud == "gcp" and word is not None:
        out.append(
            Problem(
                "gcp:project",
                f"{project} contains {word!r}, which no GCP project ID may contain; put your project's ID "
                "(gcloud config get-value project shows yours)",
            )
        )
    for path, text in _walk(spec.cluster.model_dump(by_alias=True, mode="json"), ("cluster",)):
        doc = _documentation_network(text)
        if doc is not None:
            out.append(
                Problem(
                    key(*path),
                    f"{text} is a documentation range ({doc}, RFC 5737) that no machine has; put the network you run "
                    "pulumi and kubectl from",
                )
            )
        match = _ARN_ACCOUNT.match(text)
        if match and match.group(1) in EXAMPLE_ACCOUNTS:
            out.append(
                Problem(
                    key(*path),
                    f"{text} is in {match.group(1)}, an account of AWS's documentation; name a role of your "
                    "own (aws sts get-caller-identity shows yours)",
                )
            )
    return out


def lines(spec: StackSpec, source: str) -> list[str]:
    """``problems`` one line each, their key paths in ``source`` (the stack file, or the component)."""
    return [p.line(source) for p in problems(spec)]
