"""GCP pool facts (pure): GKE's machine and accelerator facts and the GCP rules.

May import: ``components.data``, ``components.spec``, ``components.plan.plan``. No pulumi, no pulumi_gcp."""
