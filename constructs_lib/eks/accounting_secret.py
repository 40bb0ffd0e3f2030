"""The accounting database's password as the Kubernetes Secret slurmdbd reads on EKS
(`accounting.database` only): a CloudFormation custom resource backed by a Lambda function of
ours (gpucluster/agents/accounting_secret.py) that reads the database's Secrets Manager secret
and writes the Secret through the Kubernetes API.

Why not a manifest: CloudFormation resolves no Secrets Manager dynamic reference inside a
custom resource's properties, so the kubectl provider could only apply the password if the
template held it. The custom resource's properties name the secret (its ARN, from the Storage
stack's SSM parameter, read at deploy as the database's host is) and the Secret, never the
value; a replaced database secret has a new ARN, which makes an Update that rewrites the Secret.

What the function may do, and nothing else: in AWS, secretsmanager:GetSecretValue on that one
secret and writing its log group; in Kubernetes, what the Role of its group allows
(gpucluster.eks.accounting_password.writer_rbac: create Secrets in the Slurm namespace, update
and patch the one). Its IAM role reaches the cluster through an access entry of type STANDARD
that maps it to that group and to no access policy, as the topology writer's does.
"""

from __future__ import annotations

from collections.abc import Mapping

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpucluster.agents.accounting_secret_settings import (
    HANDLER,
    KEY_PROPERTY,
    KUBERNETES_GROUP,
    NAME_PROPERTY,
    NAMESPACE_PROPERTY,
    RESOURCE_TYPE,
    SECRET_ARN_PROPERTY,
    SECRET_FIELD_PROPERTY,
)
from gpucluster.constructs_lib.accounting_database import PASSWORD_KEY
from gpucluster.constructs_lib.eks.agent_function import agent_role, kubernetes_access, packaged_function
from gpucluster.eks.storage import ACCOUNTING_PASSWORD_KEY, ACCOUNTING_PASSWORD_SECRET, NAMESPACE


class AccountingPasswordSecret(Construct):
    function: cdk.aws_lambda.Function
    access_entry: eks.CfnAccessEntry
    resource: cdk.CustomResource

    def __init__(
        self, scope: Construct, id: str, cluster: eks.Cluster, secret_arn: str, tags: Mapping[str, str]
    ) -> None:
        super().__init__(scope, id)
        name = cluster.cluster_name
        role, log_group = agent_role(
            self, f"gpucluster {name}: copy the accounting database's password into the cluster"
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadAccountingDatabasePassword",
                actions=["secretsmanager:GetSecretValue"],
                resources=[secret_arn],
            )
        )
        self.access_entry, environment = kubernetes_access(self, cluster, role, KUBERNETES_GROUP)
        self.function = packaged_function(
            self,
            role=role,
            log_group=log_group,
            handler=HANDLER,
            environment=environment,
            description=f"gpucluster {name}: write the accounting database's password Secret",
        )
        self.resource = cdk.CustomResource(
            self,
            "Secret",
            service_token=self.function.function_arn,
            resource_type=RESOURCE_TYPE,
            properties={
                SECRET_ARN_PROPERTY: secret_arn,
                SECRET_FIELD_PROPERTY: PASSWORD_KEY,
                NAMESPACE_PROPERTY: NAMESPACE,
                NAME_PROPERTY: ACCOUNTING_PASSWORD_SECRET,
                KEY_PROPERTY: ACCOUNTING_PASSWORD_KEY,
            },
        )
        # A call before the access entry exists would only be refused.
        self.resource.node.add_dependency(self.access_entry)
        for key, value in tags.items():
            cdk.Tags.of(self).add(key, value)
