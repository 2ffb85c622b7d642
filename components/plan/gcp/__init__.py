"""GCP pool facts (pure): GKE's machine and accelerator facts (``gke``), the GCP rules (``rules``) and the GKE plan
(``plan``: ``Plan.gke``, what the GKE renderers register).

May import: ``components.data``, ``components.spec``, ``components.plan.plan``. No pulumi, no pulumi_gcp."""
