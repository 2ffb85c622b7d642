"""The IAM helpers of ``components/plan/aws/iam.py`` (pure data, where the plan makes policy documents with them),
under the name the AWS renderers and tests have always imported."""

from __future__ import annotations

from ...plan.aws.iam import (
    POLICY_VERSION as POLICY_VERSION,
    WORKER_NODE_POLICIES as WORKER_NODE_POLICIES,
    dns_suffix as dns_suffix,
    document as document,
    irsa_trust as irsa_trust,
    managed_policy_arn as managed_policy_arn,
    oidc_provider_arn as oidc_provider_arn,
    pod_identity_trust as pod_identity_trust,
    service_trust as service_trust,
    to_json as to_json,
)
