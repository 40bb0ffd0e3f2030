"""The EKS orchestrator's infrastructure (`orchestrator: eks`): the EKS cluster in the Network
stack's VPC, its system node group, one managed node group per compute group on the group's
EFA launch template, and the pinned add-ons.

Only gpucluster.synth.app imports this package, and only when the config chooses eks: loading
aws_cdk.aws_eks_v2 costs time that the default (EC2) synth must not pay.
"""
