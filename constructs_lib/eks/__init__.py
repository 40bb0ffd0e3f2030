"""The EKS orchestrator's constructs (`orchestrator: eks`): the managed node groups on each
group's EFA launch template, the pinned add-ons, the kubectl provider, and the agent functions
that size Capacity Block node groups, place nodes in the topology and hand the accounting
password to the cluster. stacks/eks_stack.py wires them.

Only the EKS stack imports this package, and the app imports that only when the config
chooses eks (gpucluster/synth/eks_app.py): loading aws_cdk.aws_eks_v2 costs time that the
default (EC2) synth must not pay.
"""
