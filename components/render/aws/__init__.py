"""AWS: EKS cluster access, managed GPU node groups and Karpenter. Only this package imports pulumi_aws,
and only inside the functions that build resources, so other clouds never load it.

May import: ``components.data``, ``components.spec``, ``components.plan.plan``, ``components.render``."""
