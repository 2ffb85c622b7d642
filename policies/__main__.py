"""CrossGuard entry point: builds the ``PolicyPack`` and nothing else.

``pulumi preview --policy-pack policies`` runs this file with ``policies/`` on ``sys.path`` (not the repository
root), so the root is added first; ``python -m policies`` from the root works the same way. Constructing the
``PolicyPack`` starts the analyzer's gRPC server and blocks, so nothing may import this module: tests and
``gpu-platform synth`` use ``policies.gpu_policies`` / ``policies.offline``.
"""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from policies.gpu_policies import PACK_DESCRIPTION, PACK_NAME, POLICIES  # noqa: E402

PolicyPack(
    name=PACK_NAME,
    policies=list(POLICIES),
    enforcement_level=EnforcementLevel.ADVISORY,  # only for policies without their own level (none today)
    description=PACK_DESCRIPTION,
)
