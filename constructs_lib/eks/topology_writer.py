"""Every compute node placed in Slurm's topology on EKS: a Lambda function
(gpucluster/agents/topology_writer.py) that an EventBridge schedule runs every minute writes
each compute node's Slinky topology annotation from EC2 DescribeInstanceTopology, as the EC2
head's topology timer places its nodes.

Not a pod in the cluster: the function needs no image, no Pod Identity association and no
node of its own, and it is built like the Capacity Block scaler (agent_function).

What it may do, and nothing else: in AWS, ec2:DescribeInstanceTopology (an EC2 Describe call
takes no resource ARN) and writing its log group; in Kubernetes, get, list and patch nodes.
Its IAM role reaches the cluster through an access entry of type STANDARD that maps it to one
Kubernetes group (topology_writer_settings.KUBERNETES_GROUP) and to no access policy; the
ClusterRole bound to that group (gpucluster.eks.topology.writer_rbac) is applied with the
cluster's other objects. It calls the public endpoint with the cluster's CA, both passed in
its environment from the cluster's attributes (no eks:DescribeCluster).
"""

from __future__ import annotations

from collections.abc import Mapping

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from gpucluster.agents.topology_writer_settings import HANDLER, KUBERNETES_GROUP
from gpucluster.constructs_lib.eks.agent_function import agent_function, agent_role, kubernetes_access
from gpucluster.constructs_lib.nag import acknowledge


class TopologyWriter(Construct):
    function: lambda_.Function
    access_entry: eks.CfnAccessEntry

    def __init__(self, scope: Construct, id: str, cluster: eks.Cluster, tags: Mapping[str, str]) -> None:
        super().__init__(scope, id)
        name = cluster.cluster_name
        role, log_group = agent_role(
            self, f"gpucluster {name}: write each EKS compute node's Slurm topology annotation"
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadInstanceTopology", actions=["ec2:DescribeInstanceTopology"], resources=["*"]
            )
        )
        acknowledge(
            role,
            "IAM5",
            "ec2:DescribeInstanceTopology accepts no resource ARN (an EC2 Describe call); the log "
            "writes name their log group",
            findings=("Resource::*",),
        )
        self.access_entry, environment = kubernetes_access(self, cluster, role, KUBERNETES_GROUP)
        self.function = agent_function(
            self,
            role=role,
            log_group=log_group,
            handler=HANDLER,
            environment=environment,
            description=f"gpucluster {name}: place EKS compute nodes in Slurm's topology",
            schedule_description=f"gpucluster {name}: run the EKS topology writer",
        )
        # The schedule, which names the function, starts once the access entry exists: a run
        # before it would only be refused.
        self.function.node.add_dependency(self.access_entry)
        for key, value in tags.items():
            cdk.Tags.of(self).add(key, value)
