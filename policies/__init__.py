"""gpu-platform's CrossGuard policy pack.

- ``policies.gpu_policies``: the policy objects (importable; building them starts nothing).
- ``policies.offline``: runs those same objects against an offline synth (``gpu-platform synth|check``).
- ``policies/__main__.py``: builds the ``PolicyPack`` for ``pulumi preview --policy-pack policies``
  (constructing it starts the analyzer server and blocks, so nothing else imports it).
"""
