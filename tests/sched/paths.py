"""The scheduler tests reuse the cluster tests' control plane, CRD installer and API client (tests/cluster/), and the
engine tests' Pulumi engine (tests/engine/engine.py, for deployed.py): importing this module first puts those folders on
the path (tests/sched has no conftest.py of its own, which would shadow tests/conftest.py under pytest's rootdir
imports)."""

from __future__ import annotations

import sys
from pathlib import Path

CLUSTER = str(Path(__file__).resolve().parents[1] / "cluster")
ENGINE = str(Path(__file__).resolve().parents[1] / "engine")
for folder in (CLUSTER, ENGINE):
    if folder not in sys.path:
        sys.path.append(folder)
