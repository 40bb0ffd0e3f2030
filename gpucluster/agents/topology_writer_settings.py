"""What the EKS stack hands topology_writer: the settings in the function's environment, the
Kubernetes group its access entry maps it to, and the files the function's package holds.

Standard library only, like nodegroup_settings: the synth reads these, and importing
topology_writer itself would load the AWS SDK into every synth.
"""

from __future__ import annotations

# The Kubernetes group of the function's IAM role (its EKS access entry); the writer's
# ClusterRole lets it get, list and patch nodes (gpucluster.eks.topology.writer_rbac).
KUBERNETES_GROUP = "gpucluster:topology-writer"
HANDLER = "topology_writer.handler"
# The function's package: the handler's module and every module it imports, nothing else.
# topology_agent (with scontrol) is there for its DescribeInstanceTopology reader, the EC2
# head's own.
PACKAGE = (
    "topology_writer.py",
    "kube_api.py",
    "node_annotations.py",
    "ec2_topology.py",
    "topology_agent.py",
    "scontrol.py",
    "runtime.py",
    "cluster_names.py",
)
