"""aws_eks_v2's kubectl provider: a Lambda function with kubectl and helm (the layer from
`aws-cdk-lambda-layer-kubectl-v35`) that installs charts through CloudFormation."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from gpucluster import names
from gpucluster.constructs_lib.nag import acknowledge


def kubectl_provider_options(scope: Construct) -> eks.KubectlProviderOptions:
    from aws_cdk.lambda_layer_kubectl_v35 import KubectlV35Layer

    return eks.KubectlProviderOptions(kubectl_layer=KubectlV35Layer(scope, "KubectlLayer"))


def place_kubectl_provider(cluster: eks.Cluster, subnet_id: str) -> None:
    """Run the provider's functions in the nodes' subnet (NAT, the S3 gateway endpoint).
    aws_eks_v2 puts them in the control plane's subnets whenever the endpoint is private as
    well, ignoring KubectlProviderOptions.private_subnets (aws-cdk-lib 2.275, cluster.js);
    ours have no route out, so the functions could reach neither the EKS and Lambda APIs, nor
    the chart assets in S3, nor CloudFormation's response URL, and each release would hang
    until CloudFormation gives up."""
    provider = cluster.kubectl_provider
    assert provider is not None
    for child in provider.node.find_all():
        if isinstance(child, cdk.CfnResource) and child.cfn_resource_type == "AWS::Lambda::Function":
            child.add_property_override("VpcConfig.SubnetIds", [subnet_id])


def acknowledge_kubectl_provider(cluster: eks.Cluster, region: str) -> None:
    """aws_eks_v2's kubectl provider: Lambda functions and roles that CDK builds and versions;
    their policies are CDK's, not ours to pick. Acknowledged per finding (cdk-nag 3)."""
    provider = cluster.kubectl_provider
    assert provider is not None
    policy = "Policy::arn:<AWS::Partition>:iam::aws:policy/"
    ecr_public = (
        'Policy::{"Fn::If":["ClusterKubectlProviderHandlerHasEcrPublic69E09706",{"Fn::Join":["",["arn:",'
        '{"Ref":"AWS::Partition"},":iam::aws:policy/AmazonElasticContainerRegistryPublicReadOnly"]]},'
        '{"Ref":"AWS::NoValue"}]}'
    )
    acknowledge(
        cluster,
        "IAM4",
        "CDK's kubectl provider runs with AWS's Lambda execution policies and pulls its image "
        "layer read-only; aws-cdk-lib builds these roles",
        findings=(
            f"{policy}service-role/AWSLambdaBasicExecutionRole",
            f"{policy}service-role/AWSLambdaVPCAccessExecutionRole",
            f"{policy}AmazonEC2ContainerRegistryReadOnly",
            ecr_public,
        ),
    )
    acknowledge(
        cluster,
        "IAM5",
        "CDK's kubectl provider reads the chart assets CDK stages in the bootstrap bucket, and its "
        "framework function invokes the handler's versions",
        findings=(
            "Action::s3:GetBucket*",
            "Action::s3:GetObject*",
            "Action::s3:List*",
            f"Resource::arn:<AWS::Partition>:s3:::{names.cdk_assets_bucket('<AWS::AccountId>', region)}/*",
            "Resource::<ClusterKubectlProviderHandler2E05C68A.Arn>:*",
        ),
    )
    # CDK writes a DependsOn on each provider function's role beside the GetAtt that already
    # orders them (cfn-lint W3005); harmless, and not ours to rewrite.
    for child in provider.node.find_all():
        if isinstance(child, cdk.CfnResource) and child.cfn_resource_type == "AWS::Lambda::Function":
            child.add_metadata("cfn-lint", {"config": {"ignore_checks": ["W3005"]}})
    acknowledge(
        cluster,
        "L1",
        "the kubectl provider's Lambda runtime is the one the aws-cdk-lib release that builds it pins",
    )
