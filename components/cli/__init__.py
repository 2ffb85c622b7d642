"""Stage 5, the command line and entry points: ``gpu-platform`` (``main``), the offline synth (``synth``), the
loader that validates a stack file with every stage's rules (``loader``), the program's config entry
(``config``), URN and plan snapshots (``urns``, ``plans``), the policy pack's data (``policy_data``) and the
documentation's generated pages (``docs``).

May import: every stage."""
