"""Stage 4, explain and reports: ``gpu-platform explain`` (``trace``: a workload through queue, flavor, pool,
provisioner, node and monitoring; ``facts``, ``flavors``, ``nodes``, ``schedulers``, ``workloads``), the summary
(``summary``) and the record of what a run registered (``rendering``).

May import: ``components.data``, ``components.spec``, ``components.plan``. Never ``components.render`` (explain
and the reports read what was decided, the plan, not how it is rendered; the constants they share live in the plan
modules) nor ``components.cli``."""
