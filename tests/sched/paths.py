"""The scheduler tests reuse the cluster tests' control plane, CRD installer and API client (tests/cluster/): importing
this module first puts that folder on the path (tests/sched has no conftest.py of its own, which would shadow
tests/conftest.py under pytest's rootdir imports)."""

from __future__ import annotations

import sys
from pathlib import Path

CLUSTER = str(Path(__file__).resolve().parents[1] / "cluster")
if CLUSTER not in sys.path:
    sys.path.append(CLUSTER)
