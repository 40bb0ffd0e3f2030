"""The Kubernetes version the EKS cluster runs and the EKS add-on versions pinned for it.

Pinned, never "latest": a deploy must not bring a new CoreDNS or CNI that nobody tested.
Sources (Amazon EKS user guide, as stored offline): "Amazon VPC CNI versions" lists
v1.20.1-eksbuild.3 for 1.33 and "CoreDNS versions" lists v1.12.3-eksbuild.1 for 1.33. The
kube-proxy and EBS CSI driver versions could not be confirmed offline; before a deploy check
each with `aws eks describe-addon-versions --kubernetes-version 1.33 --addon-name NAME`.
"""

from __future__ import annotations

# The system node group, defined where the subnet sizing reads it too.
from gpucluster.eks_nodes import SYSTEM_INSTANCE_TYPE as SYSTEM_INSTANCE_TYPE
from gpucluster.eks_nodes import SYSTEM_NODE_COUNT as SYSTEM_NODE_COUNT

KUBERNETES_VERSION = "1.33"

# EKS add-on name -> pinned version for KUBERNETES_VERSION.
ADD_ONS: dict[str, str] = {
    "vpc-cni": "v1.20.1-eksbuild.3",
    "coredns": "v1.12.3-eksbuild.1",
    "kube-proxy": "v1.33.3-eksbuild.4",
    # slurmctld's state (StateSaveLocation) lives on an EBS volume claimed through this driver.
    "aws-ebs-csi-driver": "v1.48.0-eksbuild.2",
}

# Runs EKS Pod Identity on each node, for the EBS CSI driver's role. Not confirmed offline.
POD_IDENTITY_AGENT = "v1.3.8-eksbuild.2"
