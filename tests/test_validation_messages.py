"""``components.spec.validation``: the exact message of each rule, each boundary, and the type factories.

The factories (``go_duration``, ``count``, ``number``, ``bounded_text``, ``_check``) are called here, inside the
tests, rather than only through the module-level types they built at import (GoDuration, Count, ...): a type
built once at import cannot show a change to the factory that builds it.

Rules: k8s.io/apimachinery/pkg/util/validation/validation.go (IsQualifiedName: prefix a DNS-1123 subdomain of
at most 253, name at most 63 of [-A-Za-z0-9_.] starting and ending alphanumeric; IsDNS1123Label; label values
at most 63); Go's time.Duration is an int64 of nanoseconds (at most 2562047h47m16.854775807s).
"""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from components.spec import validation as v

QUALIFIED_HINT = (
    "is not a valid key (letters, digits, '-', '_' and '.', starting and ending with a letter or digit, "
    "optionally prefixed by a DNS subdomain and '/')"
)


def _errors(type_, value) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as err:
        TypeAdapter(type_).validate_python(value)
    return [(e["type"], e["msg"]) for e in err.value.errors()]


# -------------------------------------------------------------------------------------------- quoting


def test_quote_keeps_up_to_the_limit_and_cuts_beyond():
    """repr up to ``limit`` characters is kept; longer is cut to limit-20 characters plus the value's length;
    mappings and lists are named, never dumped."""
    assert v.quote("x" * 78) == "'" + "x" * 78 + "'"  # repr 80
    assert v.quote("x" * 79) == "'" + "x" * 59 + "…' (79 characters)"  # repr 81
    assert v.quote("abcd", 6) == "'abcd'"
    assert v.quote("abcde", 6) == "…' (5 characters)"
    assert v.quote({"a": 1}) == "<dict>" and v.quote([1]) == "<list>"
    assert v.quote(None) == "None"


def test_a_or_an():
    """The article by the first letter as written."""
    assert [v.a_or_an(w) for w in ("existing", "gcp", "al2023", "Ubuntu", "bottlerocket")] == [
        "an existing",
        "a gcp",
        "an al2023",
        "an Ubuntu",
        "a bottlerocket",
    ]


# ---------------------------------------------------------------------------------------- kubernetes


def test_qualified_name_messages():
    """Each way a label/annotation/taint key is wrong gets its own message, quoting the key."""
    prefix_msg = ": the prefix before '/' must be a DNS-1123 subdomain of at most 253 characters"
    assert v.qualified_name_problem("/a") == "'/a'" + prefix_msg
    assert v.qualified_name_problem("Example.com/a") == "'Example.com/a'" + prefix_msg
    assert v.qualified_name_problem("a/b/c") == "'a/b/c'" + prefix_msg
    long_prefix = ("s." * 127)[:254] + "/a"  # a 254-character prefix
    assert v.qualified_name_problem(long_prefix) == v.quote(long_prefix) + prefix_msg
    assert v.qualified_name_problem("x/" + "a" * 64) == (
        v.quote("x/" + "a" * 64) + ": the name after the prefix is longer than 63 characters"
    )
    assert v.qualified_name_problem("_a") == "'_a' " + QUALIFIED_HINT
    assert v.qualified_name_problem("") == "'' " + QUALIFIED_HINT
    assert v.qualified_name_problem("example.com/a-") == "'example.com/a-' " + QUALIFIED_HINT


def test_qualified_name_accepts_what_kubernetes_accepts():
    """Upper case, '_' and '.' inside the name, a 63-character name, a 253-character prefix."""
    prefix = ("s." * 127)[:253].rstrip(".")
    for good in ("A", "a_b.c-D", "a" * 63, "example.com/" + "a" * 63, prefix + "/a", "1"):
        assert v.qualified_name_problem(good) is None, good


def test_dns_label_messages_and_custom_length():
    """A label: at most max_len (63 unless said otherwise), lower-case alphanumerics and '-'."""
    assert v.dns_label_problem("a" * 63) is None
    assert v.dns_label_problem("a" * 64) == v.quote("a" * 64) + " is longer than 63 characters"
    assert v.dns_label_problem("abcd", max_len=3) == "'abcd' is longer than 3 characters"
    assert v.dns_label_problem("abc", max_len=3) is None
    assert v.dns_label_problem("A") == (
        "'A' is not a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit)"
    )


def test_dns_subdomain_messages():
    """A subdomain: at most 253, dot-separated labels."""
    ok = ("a." * 127)[:253]
    assert v.dns_subdomain_problem(ok) is None
    assert v.dns_subdomain_problem(ok + "a") == v.quote(ok + "a") + " is longer than 253 characters"
    assert v.dns_subdomain_problem("a..b") == (
        "'a..b' is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', starting and ending with a "
        "letter or digit)"
    )


def test_label_value_messages():
    """A label value: empty, or at most 63 characters starting and ending alphanumeric."""
    assert v.label_value_problem("") is None and v.label_value_problem("x" * 63) is None
    assert v.label_value_problem("x" * 64) == (
        v.quote("x" * 64) + " is longer than 63 characters (label values take at most 63)"
    )
    assert v.label_value_problem("-a") == (
        "'-a' is not a valid label value (empty, or letters, digits, '-', '_' and '.', starting and ending with a "
        "letter or digit)"
    )


def test_check_turns_a_problem_into_a_value_error():
    """_check adapts a *_problem function to a validator: a message raises ValueError, None passes the value."""
    with pytest.raises(ValueError, match=r"^bad: x$"):
        v._check(lambda s: f"bad: {s}")("x")
    assert v._check(lambda s: None)("kept") == "kept"


# ------------------------------------------------------------------------------------------- factories


def test_bounded_text():
    """Free text up to max_len passes; longer is refused with its length and its first 40 characters."""
    text = v.bounded_text(5)
    assert TypeAdapter(text).validate_python("abcde") == "abcde"
    assert _errors(text, "abcdef") == [
        ("value_error", "Value error, is 6 characters long; at most 5 (starts 'abcdef')")
    ]
    long = "y" * 50
    assert _errors(v.bounded_text(45), long) == [
        ("value_error", f"Value error, is 50 characters long; at most 45 (starts '{'y' * 40}')")
    ]
    assert _errors(text, 5)[0][0] == "string_type"  # strict: a number is not text


def test_count_bounds_and_strictness():
    """count(ge, le): whole numbers in [ge, le] only; true/false are refused with their own message, floats and
    numeric strings are not coerced."""
    c = v.count(1, 16)
    assert TypeAdapter(c).validate_python(1) == 1 and TypeAdapter(c).validate_python(16) == 16
    assert _errors(c, 0)[0][0] == "greater_than_equal"
    assert _errors(c, 17)[0][0] == "less_than_equal"
    assert _errors(c, True) == [
        ("value_error", "Value error, must be a whole number, not true (a count is never true or false)")
    ]
    assert _errors(c, False)[0][1].endswith("not false (a count is never true or false)")
    assert _errors(c, 1.0)[0][0] == "int_type" and _errors(c, "8")[0][0] == "int_type"
    default = TypeAdapter(v.count())
    assert default.validate_python(0) == 0 and default.validate_python(2**31 - 1) == 2**31 - 1
    assert _errors(v.count(), -1)[0][0] == "greater_than_equal"
    assert _errors(v.count(), 2**31)[0][0] == "less_than_equal"


def test_number_refuses_booleans_and_infinities():
    """number(): ints and floats, never a boolean (not read as 0 or 1) nor inf/nan."""
    n = v.number()
    assert TypeAdapter(n).validate_python(3) == 3.0 and TypeAdapter(n).validate_python(0.5) == 0.5
    assert _errors(n, True) == [("value_error", "Value error, must be a number, not true")]
    assert _errors(n, float("inf"))[0][0] == "finite_number"
    assert _errors(n, float("nan"))[0][0] == "finite_number"


# ------------------------------------------------------------------------------------------- durations


def test_duration_ns():
    """Nanoseconds of a Go duration of whole-number parts; anything else is None."""
    assert v.duration_ns("1h30m") == 5400 * 10**9
    assert v.duration_ns("1h1m1s1ms1us1µs1ns") == 3661 * 10**9 + 10**6 + 2 * 10**3 + 1
    assert v.duration_ns("0s") == 0
    for bad in ("", "1", "1h 2m", "x1h", "1h30", "1.5h", "1d", "1" * 64 + "s"):
        assert v.duration_ns(bad) is None, bad
    assert v.duration_ns("1" * 63 + "s") == int("1" * 63) * 10**9  # 64 characters is still read


def test_go_duration_default_units_and_range():
    """The default pattern takes s, m and h parts; up to Go's int64 nanoseconds, not one beyond."""
    d = TypeAdapter(v.go_duration())
    for good in ("30s", "10m", "1h30m", "2562047h47m16s"):
        assert d.validate_python(good) == good
    assert _errors(v.go_duration(), "2562047h47m17s") == [
        ("value_error", "Value error, '2562047h47m17s' is beyond the longest duration Go accepts (about 2562047h)")
    ]
    for bad in ("1ms", "1d", "", "10", "h"):
        assert _errors(v.go_duration(), bad) == [
            ("value_error", f"Value error, {v.quote(bad)} is not a duration such as 30s, 10m or 1h30m")
        ], bad
    assert _errors(v.go_duration(), 30)[0][0] == "string_type"


def test_go_duration_with_its_own_pattern_and_allowed_words():
    """A field may allow finer units through ``pattern`` and fixed words (e.g. 'Never') through ``allow``;
    the range check still applies to whatever the pattern admits."""
    d = v.go_duration(r"^([0-9]+(ms|s|m|h))+$", allow=("Never",))
    ta = TypeAdapter(d)
    assert ta.validate_python("500ms") == "500ms"
    assert ta.validate_python("Never") == "Never"
    assert _errors(d, "never")[0][1].endswith("'never' is not a duration such as 30s, 10m or 1h30m")
    assert _errors(d, "9223372036855ms")[0][1].endswith("is beyond the longest duration Go accepts (about 2562047h)")
    assert ta.validate_python("9223372036854ms") == "9223372036854ms"
    ns = TypeAdapter(v.go_duration(r"^([0-9]+ns)+$"))
    assert ns.validate_python("9223372036854775807ns") == "9223372036854775807ns"  # 2**63 - 1: the longest
    with pytest.raises(ValidationError, match="beyond the longest duration"):
        ns.validate_python("9223372036854775808ns")


# ---------------------------------------------------------------------------------------------- clouds


def _cloud_errors(type_, value) -> list[str]:
    with pytest.raises(ValidationError) as err:
        TypeAdapter(type_).validate_python(value)
    return [e["msg"] for e in err.value.errors()]


@pytest.mark.parametrize(
    "region",
    [
        "us-east-1",
        "eu-central-2",
        "ap-southeast-4",
        "us-gov-west-1",
        "cn-north-1",
        "us-iso-east-1",
        "us-isob-east-1",
        "il-central-1",
        "me-south-12",
    ],
)
def test_aws_region_names_accepted(region: str):
    """AWS region names: area-direction-number, GovCloud (-gov), ISO partitions (-iso, -isob), China (cn-)."""
    assert TypeAdapter(v.AwsRegion).validate_python(region) == region


@pytest.mark.parametrize("region", ["us-east-1a", "us_east_1", "US-EAST-1", "us-east", "useast-1", "us-east-123", ""])
def test_aws_region_names_refused(region: str):
    """A zone, underscores, capitals, a missing or three-digit number: not a region name."""
    assert _cloud_errors(v.AwsRegion, region) == [
        f"Value error, {v.quote(region)} is not an AWS region name (e.g. us-east-1)"
    ]


def test_gcp_locations_and_zones():
    """A GCP location is a region (us-central1, europe-west10) or a zone (us-central1-a); a zone field takes
    zones only."""
    loc = TypeAdapter(v.GcpLocation)
    for good in ("us-central1", "europe-west10", "us-central1-a", "asia-northeast3-c"):
        assert loc.validate_python(good) == good
    for bad in ("us-central", "us-central1-", "us-central1-ab", "US-central1", "us-central123"):
        assert _cloud_errors(v.GcpLocation, bad) == [
            f"Value error, {v.quote(bad)} is not a GCP region or zone (e.g. us-central1 or us-central1-a)"
        ], bad
    assert TypeAdapter(v.GcpZone).validate_python("us-central1-f") == "us-central1-f"
    assert _cloud_errors(v.GcpZone, "us-central1") == [
        "Value error, 'us-central1' is not a zone name (like us-central1-a)"
    ]


def test_gcp_project_ids():
    """6 to 30 characters: a lower-case letter first, then letters, digits and '-', not ending with '-'."""
    project = TypeAdapter(v.GcpProject)
    for good in ("abcdef", "a" + "b" * 29, "my-proj-1"):
        assert project.validate_python(good) == good
    for bad in ("abcde", "a" * 31, "1abcdef", "abcdef-", "Abcdef", "abc_def"):
        assert _cloud_errors(v.GcpProject, bad) == [
            f"Value error, {v.quote(bad)} is not a GCP project ID (6 to 30 lower-case letters, digits and '-')"
        ], bad


def test_iam_role_arns():
    """arn:<partition>:iam::<12 digits>:role/<optional path/><name of at most 64>; at most 2048 in all."""
    arn = TypeAdapter(v.IamRoleArn)
    ok = [
        "arn:aws:iam::123456789012:role/gpu",
        "arn:aws-cn:iam::123456789012:role/gpu",
        "arn:aws-us-gov:iam::123456789012:role/gpu",
        "arn:aws-isob:iam::123456789012:role/gpu",
        "arn:aws:iam::123456789012:role/team/ml/" + "r" * 64,
        "arn:aws:iam::123456789012:role/a+=,.@-_",
    ]
    for good in ok:
        assert arn.validate_python(good) == good
    bad = [
        "arn:aws:iam::12345678901:role/gpu",  # 11 digits
        "arn:aws:iam::123456789012:user/gpu",
        "arn:aws:iam::123456789012:role/" + "r" * 65,
        "arn:azure:iam::123456789012:role/gpu",
        "arn:aws:iam::123456789012:role/" + "p/" * 1008 + "rr",  # well-formed, but 2049 characters
    ]
    assert len(bad[-1]) == 2049
    for value in bad:
        assert _cloud_errors(v.IamRoleArn, value) == [
            f"Value error, {v.quote(value)} is not an IAM role ARN (arn:aws:iam::123456789012:role/NAME)"
        ], value


def test_iam_role_arn_of_2048_characters_is_accepted():
    """The length limit is inclusive: 2,048 characters pass."""
    value = "arn:aws:iam::123456789012:role/" + "p/" * 1008 + "r"
    assert len(value) == 2048
    assert TypeAdapter(v.IamRoleArn).validate_python(value) == value


def test_cluster_name_patterns():
    """EKS: 1-100 of letters, digits, '-', '_', alphanumeric first. GKE: 1-40 lower-case, a letter first, not
    ending in '-'."""
    assert v.EKS_CLUSTER_NAME.fullmatch("A" + "b_-" * 33) and not v.EKS_CLUSTER_NAME.fullmatch("a" * 101)
    assert v.EKS_CLUSTER_NAME.fullmatch("a" * 100) and not v.EKS_CLUSTER_NAME.fullmatch("-a")
    assert v.GKE_CLUSTER_NAME.fullmatch("a" * 40) and not v.GKE_CLUSTER_NAME.fullmatch("a" * 41)
    assert v.GKE_CLUSTER_NAME.fullmatch("a") and not v.GKE_CLUSTER_NAME.fullmatch("a-")
    assert not v.GKE_CLUSTER_NAME.fullmatch("1a") and not v.GKE_CLUSTER_NAME.fullmatch("aB")
