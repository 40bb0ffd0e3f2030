"""One resource on both sides of a diff, classified from its own properties and the
CloudFormation resource schema: what changed, what forces a replacement, what may,
whether it holds data, whether it is the head node, an EKS cluster or node group."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpucluster.diff.property_rules import documented_replacements
from gpucluster.diff.resource_schemas import stateful_types, update_rules
from gpucluster.diff.template_values import MISSING, changed_paths, property_name, value_at
from gpucluster.names import HEAD_NODE_ID, MUNGE_SECRET_FACT

RETAINING_POLICIES = frozenset({"Retain", "RetainExceptOnCreate", "Snapshot"})
# Resource attributes whose change CloudFormation applies; DependsOn only orders work.
RESOURCE_ATTRIBUTES = (
    "Condition",
    "DeletionPolicy",
    "UpdateReplacePolicy",
    "UpdatePolicy",
    "CreationPolicy",
    "Metadata",
)
HEAD_NODE_TYPE = "AWS::EC2::Instance"


def is_head_node(logical_id: str, resource: dict[str, Any]) -> bool:
    """The Cluster stack's only standalone instance; CDK starts its logical ID with the
    construct id (names.HEAD_NODE_ID), which is kept fixed for that reason."""
    return resource.get("Type") == HEAD_NODE_TYPE and logical_id.startswith(HEAD_NODE_ID)


# What replacing an EKS cluster or node group stops, for the diff to call out the way it calls
# out the head node. Which properties replace them comes from their resource schemas (the
# CloudFormation pages for AWS::EKS::Cluster and AWS::EKS::Nodegroup mark the same ones
# "Update requires: Replacement": a cluster's Name, RoleArn, EncryptionConfig; a node group's
# AmiType, CapacityType, InstanceTypes, NodeRole, NodegroupName, Subnets ...).
EKS_REPLACEMENTS = {
    "AWS::EKS::Cluster": "the EKS cluster will be replaced: a new control plane; every node group, "
    "Slurm pod and running job goes with the old one",
    "AWS::EKS::Nodegroup": "the node group will be replaced: its nodes are drained and terminated, "
    "running jobs on them end, and a Capacity Block group's new nodes wait for the old ones' slots",
}


def eks_replacement(resource: dict[str, Any]) -> str | None:
    """What replacing `resource` stops, when it is an EKS cluster or node group; else None."""
    return EKS_REPLACEMENTS.get(str(resource.get("Type")))


# Updating a Capacity Block node group's size or launch template during its block is not
# known to keep its nodes: the template's DesiredSize is 0 (node_groups.py), and an update may
# scale the group back to it. The properties whose update the diff calls out:
BLOCK_GROUP_RISKY_UPDATES = ("ScalingConfig", "LaunchTemplate")
BLOCK_GROUP_UPDATE = (
    "a Capacity Block node group's size or launch template changes: the update may reset the group "
    "to 0 nodes and drain a running block's nodes, ending their jobs; make the change between blocks"
)


def is_capacity_block_group(resource: dict[str, Any]) -> bool:
    """An EKS node group on a Capacity Block (capacity type CAPACITY_BLOCK)."""
    props = resource.get("Properties", {})
    return resource.get("Type") == "AWS::EKS::Nodegroup" and props.get("CapacityType") == "CAPACITY_BLOCK"


def is_munge_key_pointer(resource: dict[str, Any]) -> bool:
    """The Storage stack's parameter naming the munge key's secret, which every node reads at
    boot: a new value is a new key for the nodes that boot after the deploy only."""
    name = resource.get("Properties", {}).get("Name")
    return (
        resource.get("Type") == "AWS::SSM::Parameter"
        and isinstance(name, str)
        and name.endswith(f"/{MUNGE_SECRET_FACT}")
    )


def is_stateful(resource: dict[str, Any]) -> bool:
    policies = {resource.get("DeletionPolicy"), resource.get("UpdateReplacePolicy")}
    return resource.get("Type") in stateful_types() or bool(policies & RETAINING_POLICIES)


@dataclass
class Assessment:
    """One resource present on both sides; grows while replacements are followed."""

    before: dict[str, Any]
    after: dict[str, Any]
    changed: list[str]
    replaced_by: list[str]
    may_replace: list[str]


def assess(before: dict[str, Any], after: dict[str, Any], region: str) -> Assessment:
    old_type, new_type = before.get("Type"), after.get("Type")
    old_props, new_props = before.get("Properties", {}), after.get("Properties", {})
    changed = changed_paths(old_props, new_props, "")
    for attribute in RESOURCE_ATTRIBUTES:
        changed += changed_paths(before.get(attribute, MISSING), after.get(attribute, MISSING), attribute)
    assessment = Assessment(before, after, changed, [], [])
    if old_type != new_type:
        assessment.replaced_by.append(f"Type {old_type} -> {new_type}")
        return assessment
    # A resource without a Type (a hand-edited baseline) has no schema: its update rules are unknown.
    resource_type: str = new_type or ""
    rules = update_rules(resource_type, region)
    documented = documented_replacements(resource_type)
    for pointer in rules.create_only:
        if value_at(old_props, pointer) != value_at(new_props, pointer):
            source = " (CloudFormation docs)" if pointer in documented else ""
            assessment.replaced_by.append(property_name(pointer) + source)
    for pointer in rules.conditional:
        if value_at(old_props, pointer) != value_at(new_props, pointer):
            assessment.may_replace.append(property_name(pointer))
    if changed and not rules.known:
        assessment.may_replace.append(f"no resource schema for {new_type}")
    return assessment
