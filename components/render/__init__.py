"""Stage 3, render: the back ends. One module per add-on (``kueue``, ``volcano``, ``gpu_operator``,
``monitoring``, ``prometheus_stack``, ``dra``, ``tenancy``...), the Kubernetes registration helpers (``k8s``,
``addon``, ``webhooks``), one package per cloud (``aws/``, ``gcp/``, ``existing``), and ``program`` calling them in
order; ``outputs`` projects the plan into stack outputs.

May import: ``components.data``, ``components.spec``, ``components.plan.plan``, and each other. Never ``explain`` or
``cli``."""
