"""AWS pool facts (pure): EFA, the managed node groups' plan, reservations, the spot/on-demand split, AWS rules.

May import: ``components.data``, ``components.spec``, ``components.plan.plan``. No pulumi, no pulumi_aws."""
