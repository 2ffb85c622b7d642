"""CrossGuard entry point: builds the ``PolicyPack`` and nothing else.

The engine starts the pack as ``python -u -m pulumi.policy <engine address> <this folder>`` (pulumi's Python
language host ``RunPlugin``, or the older ``pulumi-analyzer-policy-python`` script with ``.`` from this folder),
which runs this file with only this folder on ``sys.path``. A published pack (``pulumi policy publish``)
holds only this folder too, so everything the pack loads sits beside this file: ``pack.py`` (the policy list),
the ``*_policies.py`` modules, ``common.py`` and the generated ``pack_data.json``; nothing from the repository
(``components``) is importable here. The modules import each other relatively, so without a package (the
engine) this file loads the folder as one under a private name first. ``python -m policies`` from the
repository root works too.

Constructing the ``PolicyPack`` starts the analyzer's gRPC server, prints its port and blocks, so nothing
may import this module: tests and ``gpu-platform synth`` use ``policies.pack`` / ``policies.offline``.
"""

import importlib
import importlib.util
import sys
from pathlib import Path

from pulumi_policy import EnforcementLevel, PolicyPack

if __package__:  # python -m policies
    from .pack import PACK_DESCRIPTION, PACK_NAME, POLICIES
else:  # the engine: this folder is sys.path[0] and no package
    _here = Path(__file__).resolve().parent
    _spec = importlib.util.spec_from_file_location(
        "gpu_platform_pack", _here / "__init__.py", submodule_search_locations=[str(_here)]
    )
    assert _spec is not None and _spec.loader is not None
    sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules[_spec.name])
    _pack = importlib.import_module(f"{_spec.name}.pack")  # this folder's pack.py, as in the branch above
    PACK_DESCRIPTION, PACK_NAME, POLICIES = _pack.PACK_DESCRIPTION, _pack.PACK_NAME, _pack.POLICIES

PolicyPack(
    name=PACK_NAME,
    policies=list(POLICIES),
    enforcement_level=EnforcementLevel.ADVISORY,  # only for policies without their own level (none today)
    description=PACK_DESCRIPTION,
)
