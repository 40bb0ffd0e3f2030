"""One CloudFormation resource from the dict of its properties, handed to jsii in one call.

The typed L1 classes (ec2.CfnSecurityGroup, ...) cost a Python import of their service
module (aws_autoscaling alone pulls in a dozen more) and a Node `require` of it, and the
L2s (ec2.Vpc, iam.Role) many calls per resource; together about half of a synth. A
core `CfnResource` needs neither. What the L1 would have done is kept: the construct
path (so the logical ID), the property order of its renderer (alphabetical, so the
template bytes), and its tags (gpucluster.constructs_lib.cfn_tags).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aws_cdk as cdk
from constructs import Construct

from gpucluster.constructs_lib.cfn_tags import with_tags

Properties = Mapping[str, Any]


def in_key_order(value: Any) -> Any:
    """`value` with every object's keys in alphabetical order, the order of the L1 renderers
    (CloudFormation's property names) and of the L2s' policy documents."""
    if isinstance(value, Mapping):
        return {key: in_key_order(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [in_key_order(item) for item in value]
    return value


class Resource(cdk.CfnResource):
    """A resource whose properties are CloudFormation JSON, rendered as given.

    `ref` and `att` are asked of jsii once each and kept: every further use is free.
    """

    def __init__(self, scope: Construct, id: str, type: str, properties: Properties) -> None:
        super().__init__(scope, id, type=type, properties=properties)
        self._tokens: dict[str, str] = {}

    @property
    def ref_token(self) -> str:
        if "Ref" not in self._tokens:
            self._tokens["Ref"] = self.ref
        return self._tokens["Ref"]

    def att(self, name: str) -> str:
        """The `Fn::GetAtt` token of one attribute, as the L1's `attr_*` gives it."""
        if name not in self._tokens:
            self._tokens[name] = self.get_att(name).to_string()
        return self._tokens[name]


def resource(
    scope: Construct,
    id: str,
    type: str,
    properties: Properties,
    tags: Mapping[str, str] | None = None,
    scoped_tags: Mapping[str, str] | None = None,
) -> Resource:
    """The resource `type` at `scope/id`; `properties` in CloudFormation's spelling. `tags`
    are the ones its L1 would have been given, `scoped_tags` what `Tags.of(subtree)` would
    have added; the cluster's tags are added too (cfn_tags.tagging_every_resource)."""
    ordered = with_tags(type, in_key_order(properties), tags, scoped_tags)
    return Resource(scope, id, type, dict(sorted(ordered.items())))


def string_parameter(
    scope: Construct, id: str, name: str, value: str | Mapping[str, Any], description: str
) -> Resource:
    """An SSM String parameter (what ssm.CfnParameter with type String writes); `value` is a
    string or an intrinsic function that makes one."""
    properties = {"Description": description, "Name": name, "Type": "String", "Value": value}
    return resource(scope, id, "AWS::SSM::Parameter", properties)
