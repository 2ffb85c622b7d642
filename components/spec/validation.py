"""Reusable field types for the stack spec: the rules Kubernetes and the clouds apply to a name, number or
string, checked before anything is deployed, with messages a person can act on.

Use them as field types (``name: DnsLabel``, ``labels: dict[LabelKey, LabelValue]``, ``replicas: Count``).
Each type is a pydantic ``Annotated`` type whose validator raises ``ValueError`` with the message the user
sees (after the key path); offending input is quoted through ``quote`` (at most ~80 characters).

Sources of the rules:
- Kubernetes: k8s.io/apimachinery/pkg/util/validation/validation.go (IsDNS1123Label, IsDNS1123Subdomain,
  IsQualifiedName, IsValidLabelValue) and pkg/apis/core/validation (taints); the API server refuses a
  request body above 3 MiB (etcd's default request limit is 1.5 MiB), annotations above 256 KiB in total.
- AWS: region names (``us-east-1``, ``us-gov-west-1``, ``cn-north-1``, ``eu-central-2``); IAM role ARNs
  ``arn:<partition>:iam::<12-digit account>:role/<path/><name>`` with names of at most 64 characters.
- GCP: regions ``us-central1`` and zones ``us-central1-a``.
- Go's ``time.Duration`` is an int64 of nanoseconds: at most 2562047h47m16.854775807s (Kueue and
  Karpenter parse their durations into it).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, Strict

INT32_MAX = 2**31 - 1
QUOTE_MAX = 80


def quote(value: Any, limit: int = QUOTE_MAX) -> str:
    """``repr`` of a value, cut to about ``limit`` characters so a 5 MB string prints one short line."""
    text = repr(value) if not isinstance(value, (dict, list)) else f"<{type(value).__name__}>"
    if len(text) > limit:
        text = f"{text[: limit - 20]}…' ({len(str(value))} characters)"
    return text


def a_or_an(word: str) -> str:
    """``an existing``, ``a gcp``, ``an al2023`` (by the first letter as written: fine for our words)."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


# ----------------------------------------------------------------------------------------- kubernetes

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def dns_label_problem(v: str, max_len: int = 63) -> str | None:
    if len(v) > max_len:
        return f"{quote(v)} is longer than {max_len} characters"
    if not _DNS1123_LABEL.fullmatch(v):
        return (
            f"{quote(v)} is not a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a "
            "letter or digit)"
        )
    return None


def dns_subdomain_problem(v: str) -> str | None:
    if len(v) > 253:
        return f"{quote(v)} is longer than 253 characters"
    if not _DNS1123_SUBDOMAIN.fullmatch(v):
        return (
            f"{quote(v)} is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', starting and ending "
            "with a letter or digit)"
        )
    return None


def qualified_name_problem(v: str) -> str | None:
    """A label, annotation or taint key: ``[prefix/]name``, prefix a DNS subdomain (at most 253), name at most
    63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit."""
    prefix, slash, name = v.rpartition("/")
    if slash and (not prefix or dns_subdomain_problem(prefix)):
        return f"{quote(v)}: the prefix before '/' must be a DNS-1123 subdomain of at most 253 characters"
    if len(name) > 63:
        return f"{quote(v)}: the name after the prefix is longer than 63 characters"
    if not _QUALIFIED_NAME.fullmatch(name):
        return (
            f"{quote(v)} is not a valid key (letters, digits, '-', '_' and '.', starting and ending with a letter "
            "or digit, optionally prefixed by a DNS subdomain and '/')"
        )
    return None


def label_value_problem(v: str) -> str | None:
    if len(v) > 63:
        return f"{quote(v)} is longer than 63 characters (label values take at most 63)"
    if not _LABEL_VALUE.fullmatch(v):
        return (
            f"{quote(v)} is not a valid label value (empty, or letters, digits, '-', '_' and '.', starting and "
            "ending with a letter or digit)"
        )
    return None


def _check(fn):
    def validate(v: str) -> str:
        problem = fn(v)
        if problem:
            raise ValueError(problem)
        return v

    return validate


StrictStr = Annotated[str, Strict()]
DnsLabel = Annotated[StrictStr, AfterValidator(_check(dns_label_problem))]
DnsSubdomain = Annotated[StrictStr, AfterValidator(_check(dns_subdomain_problem))]
LabelKey = Annotated[StrictStr, AfterValidator(_check(qualified_name_problem))]
AnnotationKey = LabelKey
TaintKey = LabelKey
LabelValue = Annotated[StrictStr, AfterValidator(_check(label_value_problem))]
TaintValue = LabelValue


def bounded_text(max_len: int) -> Any:
    """Free text that ends up in an object: at most ``max_len`` characters."""

    def validate(v: str) -> str:
        if len(v) > max_len:
            raise ValueError(f"is {len(v)} characters long; at most {max_len} (starts {quote(v[:40])})")
        return v

    return Annotated[StrictStr, AfterValidator(validate)]


# A description or other free text inside one object: far below the API server's request limit even when
# an object carries several of them.
Description = bounded_text(1024)

# -------------------------------------------------------------------------------------------- numbers


def _no_bool(v: Any) -> Any:
    if isinstance(v, bool):
        raise ValueError(f"must be a whole number, not {str(v).lower()} (a count is never true or false)")
    return v


def count(ge: int = 0, le: int = INT32_MAX) -> Any:
    """A strict whole number in [ge, le]: a boolean or float is refused, not turned into 1 or truncated."""
    return Annotated[int, BeforeValidator(_no_bool), Strict(), Field(ge=ge, le=le)]


def _no_bool_number(v: Any) -> Any:
    if isinstance(v, bool):
        raise ValueError(f"must be a number, not {str(v).lower()}")
    return v


def number() -> Any:
    """A finite number (int or float); a boolean is refused, not read as 0 or 1. Bounds go in Field()."""
    return Annotated[float, BeforeValidator(_no_bool_number), Field(allow_inf_nan=False)]


NoBool = BeforeValidator(_no_bool)  # for Literal[1, 2] and other int-valued choices

Count = count()  # 0 .. int32 max: what a Kubernetes int32 field or a cloud API takes
PositiveCount = count(ge=1)

# --------------------------------------------------------------------------------------------- clouds

AWS_REGION = re.compile(r"[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]{1,2}")
GCP_REGION = re.compile(r"[a-z]+-[a-z]+[0-9]{1,2}")
GCP_ZONE = re.compile(r"[a-z]+-[a-z]+[0-9]{1,2}-[a-z]")
IAM_ROLE_ARN = re.compile(r"arn:aws(-cn|-us-gov|-iso[a-z]?)?:iam::[0-9]{12}:role/([\x21-\x7e]+/)?[\w+=,.@-]{1,64}")


def _aws_region(v: str) -> str:
    if not AWS_REGION.fullmatch(v):
        raise ValueError(f"{quote(v)} is not an AWS region name (e.g. us-east-1)")
    return v


def _gcp_location(v: str) -> str:
    if not (GCP_REGION.fullmatch(v) or GCP_ZONE.fullmatch(v)):
        raise ValueError(f"{quote(v)} is not a GCP region or zone (e.g. us-central1 or us-central1-a)")
    return v


def _gcp_zone(v: str) -> str:
    if not GCP_ZONE.fullmatch(v):
        raise ValueError(f"{quote(v)} is not a zone name (like us-central1-a)")
    return v


def _gcp_project(v: str) -> str:
    if not re.fullmatch(r"[a-z][-a-z0-9]{4,28}[a-z0-9]", v):
        raise ValueError(f"{quote(v)} is not a GCP project ID (6 to 30 lower-case letters, digits and '-')")
    return v


def _iam_role_arn(v: str) -> str:
    if len(v) > 2048 or not IAM_ROLE_ARN.fullmatch(v):
        raise ValueError(f"{quote(v)} is not an IAM role ARN (arn:aws:iam::123456789012:role/NAME)")
    return v


AwsRegion = Annotated[StrictStr, AfterValidator(_aws_region)]
GcpLocation = Annotated[StrictStr, AfterValidator(_gcp_location)]
GcpZone = Annotated[StrictStr, AfterValidator(_gcp_zone)]
IamRoleArn = Annotated[StrictStr, AfterValidator(_iam_role_arn)]
GcpProject = Annotated[StrictStr, AfterValidator(_gcp_project)]

# EKS cluster names: 1-100 characters, a letter or digit first, then letters, digits, '-' and '_'
# (CreateCluster API reference). GKE: at most 40, lower-case letters, digits and '-', a letter first.
EKS_CLUSTER_NAME = re.compile(r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}")
GKE_CLUSTER_NAME = re.compile(r"[a-z]([-a-z0-9]{0,38}[a-z0-9])?")

# ------------------------------------------------------------------------------------------ durations

_DURATION_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}
_DURATION_PART = re.compile(r"([0-9]+)(ns|us|µs|ms|s|m|h)")
GO_DURATION_MAX_NS = 2**63 - 1


def duration_ns(v: str) -> int | None:
    """Nanoseconds of a Go duration made of whole-number parts (``1h30m``), or None if it is not one."""
    if not v or len(v) > 64:
        return None
    total, pos = 0, 0
    for m in _DURATION_PART.finditer(v):
        if m.start() != pos:
            return None
        total += int(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    return total if pos == len(v) else None


def go_duration(pattern: str = r"^([0-9]+(s|m|h))+$", allow: tuple[str, ...] = ()) -> Any:
    """A duration written with the units ``pattern`` allows, within Go's time.Duration range."""

    def validate(v: str) -> str:
        if v in allow:
            return v
        if not re.match(pattern, v) or (ns := duration_ns(v)) is None:
            raise ValueError(f"{quote(v)} is not a duration such as 30s, 10m or 1h30m")
        if ns > GO_DURATION_MAX_NS:
            raise ValueError(f"{quote(v)} is beyond the longest duration Go accepts (about 2562047h)")
        return v

    return Annotated[StrictStr, AfterValidator(validate)]


GoDuration = go_duration()
