"""CrossGuard entry point: builds the ``PolicyPack`` and nothing else.

The engine starts the pack as ``python -u -m pulumi.policy <engine address> <this folder>`` (pulumi's Python
language host ``RunPlugin``, or the older ``pulumi-analyzer-policy-python`` script with ``.`` from this folder),
which runs this file with only this folder on ``sys.path``. A published pack (``pulumi policy publish``)
holds only this folder too, so everything the pack loads sits beside this file: ``gpu_policies.py`` and its
generated ``pack_data.json``; nothing from the repository (``components``) is importable here.
``python -m policies`` from the repository root works too (then the import is relative).

Constructing the ``PolicyPack`` starts the analyzer's gRPC server, prints its port and blocks, so nothing
may import this module: tests and ``gpu-platform synth`` use ``policies.gpu_policies`` / ``policies.offline``.
"""

from pulumi_policy import EnforcementLevel, PolicyPack

if __package__:  # python -m policies
    from .gpu_policies import PACK_DESCRIPTION, PACK_NAME, POLICIES
else:  # the engine: this folder is sys.path[0]
    from gpu_policies import PACK_DESCRIPTION, PACK_NAME, POLICIES

PolicyPack(
    name=PACK_NAME,
    policies=list(POLICIES),
    enforcement_level=EnforcementLevel.ADVISORY,  # only for policies without their own level (none today)
    description=PACK_DESCRIPTION,
)
