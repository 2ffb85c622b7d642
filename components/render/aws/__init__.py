"""AWS: EKS cluster access, managed GPU node groups and Karpenter. Only this package imports pulumi_aws,
and only inside the functions that build resources, so other clouds never load it.

May import: ``components.data``, ``components.plan``, ``components.render``; never ``components.spec`` (the
components take the plan)."""
