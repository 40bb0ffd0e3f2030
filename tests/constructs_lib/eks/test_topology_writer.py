"""Every compute node placed in Slurm's topology on EKS: the EKS stack's scheduled function
(constructs_lib/eks/topology_writer.py) runs topology_writer with least privilege in AWS
and in Kubernetes, from a package of exactly the modules it imports. cdk-nag and cfn-lint
judge it with the rest of the stack (test_eks_stack.py)."""

from __future__ import annotations

import json

import yaml

from gpucluster.agent_package import agent_tree, handler_module
from gpucluster.agents.kube_api import CA_SETTING, ENDPOINT_SETTING
from gpucluster.agents.topology_writer_settings import HANDLER, KUBERNETES_GROUP
from tests.agent_scripts import files_under
from tests.conftest import resources_of
from tests.constructs_lib.eks.test_block_scaler import logical_of, of_construct
from tests.stacks.test_eks_releases_and_on_demand import eks_template
from tests.stacks.test_eks_stack import EXAMPLE, templates

PREFIX = "TopologyWriter"


def test_the_function_runs_every_minute_against_this_clusters_endpoint_and_ca(eks_synthesized):
    template = templates(eks_synthesized)["eks"]
    function = of_construct(template, "AWS::Lambda::Function", PREFIX)["Properties"]
    assert function["Handler"] == HANDLER
    assert function["Runtime"] == "python3.14"
    cluster = logical_of(template, "AWS::EKS::Cluster", "Cluster")
    assert function["Environment"]["Variables"] == {
        "GPUCLUSTER_CLUSTER": {"Ref": cluster},
        ENDPOINT_SETTING: {"Fn::GetAtt": [cluster, "Endpoint"]},
        CA_SETTING: {"Fn::GetAtt": [cluster, "CertificateAuthorityData"]},
    }
    assert "VpcConfig" not in function  # the endpoint is public; no NAT needed
    rule = of_construct(template, "AWS::Events::Rule", PREFIX)["Properties"]
    assert rule["ScheduleExpression"] == "rate(1 minute)"
    [target] = rule["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [logical_of(template, "AWS::Lambda::Function", PREFIX), "Arn"]}
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 0}


def test_in_aws_the_function_may_only_read_instance_topology_and_write_its_log(eks_synthesized):
    template = templates(eks_synthesized)["eks"]
    policy = of_construct(template, "AWS::IAM::Policy", PREFIX)
    log_group = logical_of(template, "AWS::Logs::LogGroup", PREFIX)
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [
        {
            "Action": "ec2:DescribeInstanceTopology",
            "Effect": "Allow",
            "Resource": "*",
            "Sid": "ReadInstanceTopology",
        },
        {
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [log_group, "Arn"]},
        },
    ]
    role = of_construct(template, "AWS::IAM::Role", PREFIX)["Properties"]
    assert "ManagedPolicyArns" not in role and "Policies" not in role
    assert json.dumps(role["AssumeRolePolicyDocument"]["Statement"]) == json.dumps(
        [{"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}]
    )


def test_in_kubernetes_its_role_is_one_group_with_no_access_policy(eks_synthesized):
    template = templates(eks_synthesized)["eks"]
    entry = of_construct(template, "AWS::EKS::AccessEntry", PREFIX)["Properties"]
    role = logical_of(template, "AWS::IAM::Role", PREFIX)
    assert entry == {
        "ClusterName": {"Ref": logical_of(template, "AWS::EKS::Cluster", "Cluster")},
        "PrincipalArn": {"Fn::GetAtt": [role, "Arn"]},
        "Type": "STANDARD",
        "KubernetesGroups": [KUBERNETES_GROUP],
        "Tags": entry["Tags"],
    }
    # The cluster takes access entries (aws_eks_v2's default authentication mode).
    cluster = of_construct(template, "AWS::EKS::Cluster", "Cluster")["Properties"]
    assert cluster["AccessConfig"]["AuthenticationMode"] in ("API", "API_AND_CONFIG_MAP")
    # The schedule's function is made once the entry exists.
    function = of_construct(template, "AWS::Lambda::Function", PREFIX)
    assert logical_of(template, "AWS::EKS::AccessEntry", PREFIX) in function["DependsOn"]


def _applied(template) -> list[dict]:
    """Every object the stack's manifests apply (the manifest is a JSON string, tokens joined)."""
    docs = []
    for manifest in resources_of(template, "Custom::AWSCDK-EKS-KubernetesResource").values():
        text = manifest["Properties"]["Manifest"]
        if isinstance(text, dict):
            text = "".join(p if isinstance(p, str) else "TOKEN" for p in text["Fn::Join"][1])
        docs.extend(yaml.safe_load(text))
    return docs


def test_the_groups_rbac_allows_only_get_list_and_patch_of_nodes(eks_synthesized):
    docs = _applied(templates(eks_synthesized)["eks"])
    group = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": KUBERNETES_GROUP}
    [binding] = [d for d in docs if "Binding" in d["kind"] and group in d["subjects"]]
    assert binding["kind"] == "ClusterRoleBinding" and binding["subjects"] == [group]
    [role] = [
        d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == binding["roleRef"]["name"]
    ]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}]


def test_the_function_is_made_after_its_rbac_and_deleted_before_it(eks_synthesized):
    """A run before the ClusterRoleBinding exists is refused; a run after it is gone too."""
    template = templates(eks_synthesized)["eks"]
    function = of_construct(template, "AWS::Lambda::Function", PREFIX)
    holding = [
        name
        for name, manifest in resources_of(template, "Custom::AWSCDK-EKS-KubernetesResource").items()
        if KUBERNETES_GROUP in json.dumps(manifest["Properties"]["Manifest"])
    ]
    assert holding and set(holding) <= set(function["DependsOn"])


def test_the_package_is_the_tree_of_what_the_handler_imports(eks_synthesized):
    result = eks_synthesized[EXAMPLE]
    function = of_construct(templates(eks_synthesized)["eks"], "AWS::Lambda::Function", PREFIX)
    asset = function["Properties"]["Code"]["S3Key"].removesuffix(".zip")
    assert files_under(result.outdir / f"asset.{asset}") == agent_tree((handler_module(HANDLER),))


def test_an_on_demand_only_cluster_gets_the_writer_too():
    """Placement matters on demand as much as on a block: every EKS cluster has it."""

    def on_demand_only(d):
        d["compute_groups"][0]["capacity"] = {"type": "on-demand"}

    template, _ = eks_template(change=on_demand_only)
    assert of_construct(template, "AWS::Lambda::Function", PREFIX)["Properties"]["Handler"] == HANDLER
