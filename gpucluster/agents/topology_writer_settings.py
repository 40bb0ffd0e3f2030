"""What the EKS stack hands topology_writer: the settings in the function's environment, the
Kubernetes group its access entry maps it to, and its handler.

Standard library only, like nodegroup_settings: the synth reads these, and importing
topology_writer itself would load the AWS SDK into every synth.
"""

from __future__ import annotations

# The Kubernetes group of the function's IAM role (its EKS access entry); the writer's
# ClusterRole lets it get, list and patch nodes (gpucluster.eks.topology.writer_rbac).
KUBERNETES_GROUP = "gpucluster:topology-writer"
# The function's package is what the handler's module imports, followed (gpucluster.agent_package).
HANDLER = "gpucluster.agents.topology_writer.handler"
