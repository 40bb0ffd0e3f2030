"""The EKS add-ons at their pinned versions (gpucluster.constructs_lib.eks.versions).

The EBS CSI driver's controller gets its AWS permissions through EKS Pod Identity, on a role
only its service account can assume, rather than from every node's role.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpucluster.constructs_lib.eks.versions import ADD_ONS, CLUSTER_ADD_ONS, POD_IDENTITY_AGENT
from gpucluster.constructs_lib.nag import acknowledge

EBS_CSI = "aws-ebs-csi-driver"
# Add-ons of DaemonSets only, which a cluster without nodes takes as they are. Every other one
# runs a Deployment whose pods need a node before the add-on becomes ACTIVE, so it waits for
# the system node group (as terraform-aws-eks orders its add-ons against compute).
BEFORE_NODES = frozenset({"vpc-cni", "kube-proxy", "eks-pod-identity-agent"})
EBS_CSI_SERVICE_ACCOUNT = "ebs-csi-controller-sa"
EBS_CSI_POLICY = "service-role/AmazonEBSCSIDriverPolicy"
RESOLVE_CONFLICTS = "OVERWRITE"


def add_ons(scope: Construct, cluster: eks.ICluster, nodes: Construct) -> dict[str, eks.Addon]:
    """Every add-on of ADD_ONS and CLUSTER_ADD_ONS and the Pod Identity agent, by name; those
    not BEFORE_NODES after `nodes`."""
    agent = eks.Addon(
        scope,
        "AddOn-eks-pod-identity-agent",
        cluster=cluster,
        addon_name="eks-pod-identity-agent",
        addon_version=POD_IDENTITY_AGENT,
    )
    made = {"eks-pod-identity-agent": agent}
    for name, version in {**ADD_ONS, **CLUSTER_ADD_ONS}.items():
        made[name] = eks.Addon(
            scope, f"AddOn-{name}", cluster=cluster, addon_name=name, addon_version=version
        )
    role = iam.Role(
        scope,
        "EbsCsiRole",
        assumed_by=iam.ServicePrincipal("pods.eks.amazonaws.com"),
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(EBS_CSI_POLICY)],
        description="EBS CSI controller (Pod Identity): creates and attaches slurmctld's state volume",
    )
    # Pod Identity's trust policy needs sts:TagSession beside sts:AssumeRole (EKS user guide,
    # "Create an IAM role with trust policy for EKS Pod Identity").
    role.assume_role_policy.add_statements(  # type: ignore[union-attr]
        iam.PolicyStatement(
            actions=["sts:TagSession"], principals=[iam.ServicePrincipal("pods.eks.amazonaws.com")]
        )
    )
    acknowledge(
        role,
        "IAM4",
        "AWS's policy for the EBS CSI driver, kept current by AWS with the driver's needs; it is "
        "scoped to the driver's service account through Pod Identity",
        findings=(f"Policy::arn:<AWS::Partition>:iam::aws:policy/{EBS_CSI_POLICY}",),
    )
    for name, addon in made.items():
        if name not in BEFORE_NODES:
            addon.node.add_dependency(nodes)
        # EKS installs vpc-cni, kube-proxy and coredns itself when it creates the cluster; with
        # the default NONE, creating the add-on over them fails on any field the pinned version
        # sets differently ("ConfigurationConflict": eksctl-io/eksctl#3414,
        # aws/amazon-network-policy-controller-k8s#200). Nothing in the new cluster is the
        # user's to keep, so the add-on's values win.
        cfn_addon = addon.node.default_child
        assert isinstance(cfn_addon, cdk.CfnResource)
        cfn_addon.add_property_override("ResolveConflicts", RESOLVE_CONFLICTS)
    ebs = made[EBS_CSI]
    ebs.node.add_dependency(agent)
    cfn = ebs.node.default_child
    assert isinstance(cfn, cdk.CfnResource)
    association = {"RoleArn": role.role_arn, "ServiceAccount": EBS_CSI_SERVICE_ACCOUNT}
    cfn.add_property_override("PodIdentityAssociations", [association])
    return made
