"""GCP: GKE cluster access and GPU node pools. Only this package imports pulumi_gcp, and only inside
the functions that build resources, so other clouds never load it.

May import: ``components.data``, ``components.plan``, ``components.render``; never ``components.spec`` (the
components take the plan)."""
