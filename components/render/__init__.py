"""Stage 3, render: the back ends. One module per add-on (``kueue``, ``volcano``, ``gpu_operator``,
``monitoring``, ``prometheus_stack``, ``dra``, ``tenancy``...), the Kubernetes registration helpers (``k8s``,
``addon``, ``webhooks``), one package per cloud (``aws/``, ``gcp/``, ``existing``), and ``program`` calling them in
order; ``outputs`` projects the plan into stack outputs.

May import: ``components.data``, ``components.plan`` (the plan, and the names and pure helpers its modules
define), and each other. Never ``explain`` or ``cli``, and never ``components.spec``: below the plan nothing reads
the spec (the entries, ``program.run`` and the
``platform.GpuPlatform`` component, take it to build the plan)."""
