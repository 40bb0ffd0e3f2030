"""One construct in its own small stack: the shared setup of the construct-level tests.

Each test module builds its constructs once (module-scoped fixtures) with `build`, then
asserts on the template with aws_cdk.assertions. The app is the one every gpucluster
synth starts from (gpucluster.synth.app.new_app), so the settings match production's.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import aws_cdk as cdk
from aws_cdk.assertions import Template

from gpucluster.config import ClusterConfig
from gpucluster.synth.cdk_runtime import new_app

C = TypeVar("C")

# Ids that stand in for what other stacks export; plain strings keep the template literal.
VPC_ID = "vpc-0123456789abcdef0"
SUBNET_ID = "subnet-0123456789abcdef0"
NODES_SG = "sg-0000000000000000a"
EFA_SG = "sg-0000000000000000b"
STORAGE_SG = "sg-0000000000000000c"
PROFILE_ARN = "arn:aws:iam::123456789012:instance-profile/demo-compute"
IMAGE_ID = "ami-0123456789abcdef0"
# The account a policy is read as deployed in (`deployed`).
ACCOUNT = "123456789012"


@dataclass(frozen=True)
class Built(Generic[C]):
    construct: C
    template: Template
    stack: cdk.Stack

    def resources(self, kind: str) -> dict[str, dict[str, Any]]:
        """Logical id -> resource of every resource of `kind` (with Type, Properties, policies)."""
        found: dict[str, dict[str, Any]] = self.template.find_resources(kind)
        return found

    def only(self, kind: str) -> dict[str, Any]:
        """The properties of the one resource of `kind`; fails when there are none or several."""
        found = self.resources(kind)
        assert len(found) == 1, f"expected one {kind}, found {sorted(found)}"
        properties: dict[str, Any] = next(iter(found.values())).get("Properties", {})
        return properties

    def logical_id(self, element: cdk.CfnElement) -> str:
        return self.stack.resolve(element.logical_id)  # type: ignore[no-any-return]


def build(
    make: Callable[[cdk.Stack], C], cfg: ClusterConfig | None = None, outdir: Path | None = None
) -> Built[C]:
    """`make(stack)` in a fresh app's only stack (in `cfg`'s account and region), synthesized.

    The cloud assembly goes to `outdir` when a test reads it (assets), else to a temporary
    directory removed at once: the template is kept in memory.
    """
    with tempfile.TemporaryDirectory(prefix="gpucluster-small-stack-") as scratch:
        app = new_app(str(outdir or scratch))
        env = cdk.Environment(account=cfg.account, region=cfg.region) if cfg else None
        stack = cdk.Stack(app, "Small", env=env)
        construct = make(stack)
        return Built(construct, Template.from_stack(stack), stack)


def ref(built: Built[Any], element: cdk.CfnElement) -> dict[str, str]:
    """How the template refers to `element`: {"Ref": <logical id>}."""
    return {"Ref": built.logical_id(element)}


def group_id(built: Built[Any], group: cdk.CfnElement) -> dict[str, list[str]]:
    """How the template refers to a security group's id: GetAtt GroupId."""
    return {"Fn::GetAtt": [built.logical_id(group), "GroupId"]}


def deployed(value: Any) -> Any:
    """A policy as IAM sees it once deployed in account ACCOUNT of the aws partition."""
    if isinstance(value, dict) and set(value) == {"Ref"}:
        return {"AWS::Partition": "aws", "AWS::AccountId": ACCOUNT}[value["Ref"]]
    if isinstance(value, dict) and set(value) == {"Fn::Join"}:
        separator, parts = value["Fn::Join"]
        return separator.join(deployed(part) for part in parts)
    if isinstance(value, dict):
        return {key: deployed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [deployed(item) for item in value]
    return value
