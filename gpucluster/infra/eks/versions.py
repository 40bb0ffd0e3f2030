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

# What the cluster needs for Slurm pods to run: cert-manager (the slurm-operator chart's
# webhook certificate; certManager.enabled defaults to true in its values) and the FSx for
# Lustre CSI driver (the static PersistentVolume of gpucluster.eks.storage) are EKS add-ons;
# cert-manager is one of the community add-ons. Versions seen in public sources, not confirmed
# for 1.33 offline (check with `aws eks describe-addon-versions` as above):
# cert-manager v1.19.1-eksbuild.1 is the version created in aws/containers-roadmap#2712 (Nov
# 2025); aws-fsx-csi-driver v1.7.0-eksbuild.1 is the lowest version the EKS user guide lists
# for hybrid nodes (awsdocs/amazon-eks-user-guide#1215), later than aws/containers-roadmap#2625
# (June 2025: the add-on was not yet offered for 1.33). The FSx add-on is built from
# kubernetes-sigs/aws-fsx-csi-driver's chart, whose node DaemonSet tolerates every taint
# (node.tolerateAllTaints: true in charts/aws-fsx-csi-driver/values.yaml), so it runs on the
# tainted GPU nodes unconfigured; a static volume needs no AWS permissions for the controller.
CERT_MANAGER = "cert-manager"
FSX_CSI = "aws-fsx-csi-driver"
CLUSTER_ADD_ONS: dict[str, str] = {
    CERT_MANAGER: "v1.19.1-eksbuild.1",
    FSX_CSI: "v1.7.0-eksbuild.1",
}


# The device plugins have no EKS add-on; their charts are vendored (small, Apache-2.0), each
# with LICENSE and PROVENANCE, and deploy as chart assets like Slinky's: nothing is pulled
# from a chart repository at deploy, and the suite renders them with the real helm.
# NVIDIA/k8s-device-plugin v0.17.1 (also aws-ia/terraform-aws-eks-blueprints' pin for GPU
# nodes with EFA, patterns/targeted-odcr/helm.tf) in gpucluster/data/nvidia-device-plugin/;
# aws/eks-charts' aws-efa-k8s-device-plugin chart v0.5.30 (image v0.5.20) in
# gpucluster/data/eks-charts/. Their images (nvcr.io, the EKS ECR account) are pulled by
# the nodes at deploy, which no test here can do.
NVIDIA_DEVICE_PLUGIN = "v0.17.1"
EFA_DEVICE_PLUGIN = "v0.5.30"
