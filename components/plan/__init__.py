"""Stage 2, plan: the validated spec in, every decision out. ``plan.build`` makes the frozen plan
(``plan.plan``) from the same functions the renderers call: shared derivations (``derive``), sharing and MIG
(``sharing``, ``mig``), reservations, cost, the tenants' namespace facts (``tenancy``), the clouds' pure pool
facts (``aws/``, ``gcp/``) and the cloud-neutral stack rules (``rules_core``).

May import: ``components.data``, ``components.spec``, and each other. Never a renderer, pulumi or a cloud SDK."""
