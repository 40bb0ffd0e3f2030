"""Capacity Block node groups follow their block on EKS: the EKS stack's scheduled function
(constructs_lib/eks/block_scaler.py) runs nodegroup_scaler with least privilege, from a
package of exactly the modules it imports. cdk-nag and cfn-lint judge it with the rest of the
stack (test_eks_stack.py)."""

from __future__ import annotations

import json

from gpucluster.agent_package import agent_tree, handler_module
from gpucluster.agents.nodegroup_settings import (
    GROUPS_SETTING,
    HANDLER,
    BlockNodeGroup,
    parse_groups,
)
from tests.agent_scripts import files_under
from tests.conftest import resources_of
from tests.stacks.test_eks_releases_and_on_demand import eks_template
from tests.stacks.test_eks_stack import EXAMPLE, templates

GROUP = "h100"
BLOCK = "cr-0a1b2c3d4e5f60718"


def logical_of(template, kind, prefix):
    [found] = [logical for logical in resources_of(template, kind) if logical.startswith(prefix)]
    return found


def groups_in(function) -> list[BlockNodeGroup]:
    """GPUCLUSTER_BLOCK_GROUPS with each deploy-time token written as the attribute it names."""
    parts = function["Properties"]["Environment"]["Variables"][GROUPS_SETTING]["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else "{}.{}".format(*p["Fn::GetAtt"]) for p in parts)
    return parse_groups(text)


def of_construct(template, kind, prefix):
    """The one resource of `kind` the construct `prefix` (its logical id's start) made."""
    [found] = [res for logical, res in resources_of(template, kind).items() if logical.startswith(prefix)]
    return found


def scaler(template):
    return (
        of_construct(template, "AWS::Lambda::Function", "BlockScaler"),
        of_construct(template, "AWS::IAM::Policy", "BlockScaler"),
    )


def test_the_function_sizes_the_block_group_by_its_own_name_every_minute(eks_synthesized):
    template = templates(eks_synthesized)["eks"]
    function, _ = scaler(template)
    props = function["Properties"]
    assert props["Handler"] == HANDLER
    assert props["Runtime"] == "python3.14"
    cluster = logical_of(template, "AWS::EKS::Cluster", "Cluster")
    assert props["Environment"]["Variables"]["GPUCLUSTER_CLUSTER"] == {"Ref": cluster}
    # The node group's Ref is "<cluster>/<node group>", which DescribeNodegroup refuses.
    node_group = logical_of(template, "AWS::EKS::Nodegroup", "Computeh100")
    assert groups_in(function) == [BlockNodeGroup(GROUP, f"{node_group}.NodegroupName", 2, BLOCK)]
    rule = of_construct(template, "AWS::Events::Rule", "BlockScaler")
    assert rule["Properties"]["ScheduleExpression"] == "rate(1 minute)"
    [target] = rule["Properties"]["Targets"]
    function_logical = logical_of(template, "AWS::Lambda::Function", "BlockScaler")
    assert target["Arn"] == {"Fn::GetAtt": [function_logical, "Arn"]}
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 0}


def test_the_function_may_resize_only_the_block_node_groups(eks_synthesized):
    template = templates(eks_synthesized)["eks"]
    _, policy = scaler(template)
    node_group = logical_of(template, "AWS::EKS::Nodegroup", "Computeh100")
    log_group = logical_of(template, "AWS::Logs::LogGroup", "BlockScaler")
    statements = {
        json.dumps(s["Action"]): s["Resource"] for s in policy["Properties"]["PolicyDocument"]["Statement"]
    }
    assert statements == {
        '"ec2:DescribeCapacityReservations"': "*",
        '["eks:DescribeNodegroup", "eks:UpdateNodegroupConfig"]': {"Fn::GetAtt": [node_group, "Arn"]},
        '["logs:CreateLogStream", "logs:PutLogEvents"]': {"Fn::GetAtt": [log_group, "Arn"]},
    }
    role = logical_of(template, "AWS::IAM::Role", "BlockScaler")
    assert "ManagedPolicyArns" not in template["Resources"][role]["Properties"]


def test_the_package_is_the_tree_of_what_the_handler_imports(eks_synthesized):
    result = eks_synthesized[EXAMPLE]
    function, _ = scaler(templates(eks_synthesized)["eks"])
    assert function["Properties"]["Handler"] == HANDLER == "gpucluster.agents.nodegroup_scaler.handler"
    asset = function["Properties"]["Code"]["S3Key"].removesuffix(".zip")
    assert files_under(result.outdir / f"asset.{asset}") == agent_tree((handler_module(HANDLER),))


def test_only_capacity_block_groups_are_sized_and_none_means_no_function():
    def add_on_demand(d):
        d["compute_groups"].append(
            {"name": "spare", "instance_type": "g6e.48xlarge", "count": 1, "capacity": {"type": "on-demand"}}
        )

    template, _ = eks_template(change=add_on_demand)
    function, policy = scaler(template)
    assert [g.group for g in groups_in(function)] == [GROUP]
    eks_statement = policy["Properties"]["PolicyDocument"]["Statement"][1]
    assert eks_statement["Resource"]["Fn::GetAtt"][0].startswith("Computeh100")

    def on_demand_only(d):
        d["compute_groups"][0]["capacity"] = {"type": "on-demand"}

    template, _ = eks_template(change=on_demand_only)
    for kind in ("AWS::Lambda::Function", "AWS::Events::Rule"):
        assert not [logical for logical in resources_of(template, kind) if logical.startswith("BlockScaler")]
