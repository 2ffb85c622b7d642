"""gpu-platform's CrossGuard policy pack.

- ``policies.pack``: every policy object, in one list (importable; building them starts nothing); the
  policies live by concern in ``capacity_policies``, ``scheduling_policies``, ``security_policies``,
  ``monitoring_policies``, ``cost_policies`` and ``dra_policies``, their shared helpers in ``common``.
- ``policies.offline``: runs those same objects against an offline synth (``gpu-platform synth|check``).
- ``policies/__main__.py``: builds the ``PolicyPack`` for ``pulumi preview --policy-pack policies``
  (constructing it starts the analyzer server and blocks, so nothing else imports it).
"""
