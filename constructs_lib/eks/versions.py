"""The Kubernetes version the EKS cluster runs and the EKS add-on versions pinned for it.

Pinned, never "latest": a deploy must not bring a new CoreDNS or CNI that nobody tested.

Kubernetes 1.35: the newest minor EKS offers in standard support as of December 2026
(endoflife.date/amazon-eks: released on EKS 28 Jan 2026, standard support to 27 Mar 2027;
1.34's ends 2 Dec 2026, 1.33's ended 29 Jul 2026; EKS user guide, "Understand the Kubernetes
version lifecycle on EKS": 14 months of standard support, then 12 of extended support at an
extra cost per cluster hour). It is also the minor of the kubectl/helm layer the stack ships
(kubectl.py, `lambda_layer_kubectl_v35`; kubectl supports one minor of skew) and of the schemas
the manifests are checked against (tests/eks/schemas.py). Node groups run the AL2023 AMIs
(AL2023_x86_64_NVIDIA for GPUs, AL2023_x86_64_STANDARD for the system group), which EKS builds
for every supported version; AL2 AMIs end at 1.32.

The EKS user guide's add-on version tables, as stored offline, stop at 1.33, so no pin below is
confirmed by AWS's own text. Sources per add-on, all public configurations or threads that
record `aws eks describe-addon-versions --kubernetes-version 1.35` output:
- vpc-cni v1.22.4-eksbuild.3, coredns v1.13.2-eksbuild.21, kube-proxy v1.35.3-eksbuild.21:
  the 1.35 defaults (defaultVersion true) that a public Terraform configuration records as read
  from the API on 2026-08-27; kube-proxy's v1.35.3 line is also in
  zalando-incubator/kubernetes-on-aws#11668 (v1.35.3-eksbuild.13, July 2026).
- aws-ebs-csi-driver v1.59.0-eksbuild.1 and eks-pod-identity-agent v1.3.10-eksbuild.3: a
  public CDK configuration's pins for 1.35, with the describe-addon-versions command that
  produced them (May 2026); the pod identity agent's pin recurs in other 1.35 configurations.
- cert-manager v1.21.0-eksbuild.3: one public Terraform configuration that pins it next to
  1.35 add-ons; weakest of the confirmed-by-others pins.
- aws-fsx-csi-driver v1.7.0-eksbuild.1: no 1.35 source found offline; the lowest version the
  EKS user guide lists for hybrid nodes (awsdocs/amazon-eks-user-guide#1215, Jan 2026).
Unconfirmed offline, all of them: before a deploy check each with
`aws eks describe-addon-versions --kubernetes-version 1.35 --addon-name NAME`.
"""

from __future__ import annotations

# The system node group, defined where the subnet sizing reads it too.
from gpucluster.eks_nodes import SYSTEM_INSTANCE_TYPE as SYSTEM_INSTANCE_TYPE
from gpucluster.eks_nodes import SYSTEM_NODE_COUNT as SYSTEM_NODE_COUNT

KUBERNETES_VERSION = "1.35"

# EKS add-on name -> pinned version for KUBERNETES_VERSION (sources above).
ADD_ONS: dict[str, str] = {
    "vpc-cni": "v1.22.4-eksbuild.3",
    "coredns": "v1.13.2-eksbuild.21",
    "kube-proxy": "v1.35.3-eksbuild.21",
    # slurmctld's state (StateSaveLocation) lives on an EBS volume claimed through this driver.
    "aws-ebs-csi-driver": "v1.59.0-eksbuild.1",
}

# Runs EKS Pod Identity on each node, for the EBS CSI driver's role.
POD_IDENTITY_AGENT = "v1.3.10-eksbuild.3"

# What the cluster needs for Slurm pods to run: cert-manager (the slurm-operator chart's
# webhook certificate; certManager.enabled defaults to true in its values) and the FSx for
# Lustre CSI driver (the static PersistentVolume of gpucluster.eks.storage) are EKS add-ons;
# cert-manager is one of the community add-ons. The FSx add-on is built from
# kubernetes-sigs/aws-fsx-csi-driver's chart, whose node DaemonSet tolerates every taint
# (node.tolerateAllTaints: true in charts/aws-fsx-csi-driver/values.yaml), so it runs on the
# tainted GPU nodes unconfigured; a static volume needs no AWS permissions for the controller.
CERT_MANAGER = "cert-manager"
FSX_CSI = "aws-fsx-csi-driver"
CLUSTER_ADD_ONS: dict[str, str] = {
    CERT_MANAGER: "v1.21.0-eksbuild.3",
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
