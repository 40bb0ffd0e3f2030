"""One CloudFormation resource from the dict of its properties, handed to jsii in one call.

The typed L1 classes (ec2.CfnSecurityGroup, ...) cost a Python import of their service
module (aws_autoscaling alone pulls in a dozen more) and a Node `require` of it, and the
L2s (ec2.Vpc, iam.Role) many calls per resource; together about half of a synth. A
core `CfnResource` needs neither. What the L1 would have done is kept: the construct
path (so the logical ID), the property order of its renderer (alphabetical, so the
template bytes), and its tags, which CDK's own TagManager renders, so `Tags.of(...)`
and the tag order of the L1 hold here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import jsii
from constructs import Construct

Properties = Mapping[str, Any]


@dataclass(frozen=True)
class TagStyle:
    """How a type's L1 (aws-cdk-lib's generated code) takes and renders its tags.

    KEY_VALUE stands for the L1s' STANDARD: both render [{Key, Value}] in the same order,
    but STANDARD leaves the capital letters to the L1's renderer, which a CfnResource has not.
    """

    kind: cdk.TagType
    property: str = "Tags"


STANDARD = TagStyle(cdk.TagType.KEY_VALUE)
# Every taggable type gpucluster builds; a type missing here is untaggable, as its L1 is.
TAG_STYLES: dict[str, TagStyle] = {
    "AWS::AutoScaling::AutoScalingGroup": TagStyle(cdk.TagType.AUTOSCALING_GROUP),
    "AWS::EC2::EIP": STANDARD,
    "AWS::EC2::FlowLog": STANDARD,
    "AWS::EC2::Instance": STANDARD,
    "AWS::EC2::InternetGateway": STANDARD,
    "AWS::EC2::NatGateway": STANDARD,
    "AWS::EC2::PlacementGroup": STANDARD,
    "AWS::EC2::RouteTable": STANDARD,
    "AWS::EC2::SecurityGroup": STANDARD,
    "AWS::EC2::Subnet": STANDARD,
    "AWS::EC2::VPC": STANDARD,
    "AWS::EC2::VPCEndpoint": STANDARD,
    "AWS::EFS::FileSystem": TagStyle(cdk.TagType.KEY_VALUE, "FileSystemTags"),
    "AWS::FSx::FileSystem": STANDARD,
    "AWS::IAM::Role": STANDARD,
    "AWS::Logs::LogGroup": STANDARD,
    "AWS::Route53::HostedZone": TagStyle(cdk.TagType.KEY_VALUE, "HostedZoneTags"),
    "AWS::SSM::Parameter": TagStyle(cdk.TagType.MAP),
    "AWS::SecretsManager::Secret": STANDARD,
}


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
        super().__init__(scope, id, type=type, properties=in_key_order(properties))
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


@jsii.implements(cdk.ITaggableV2)
class TaggedResource(Resource):
    """A taggable resource: its TagManager takes the tags the L1 would have taken from its
    props (`tags`) and those of `Tags.of(...)`; CDK merges and orders them as for the L1."""

    def __init__(self, scope: Construct, id: str, type: str, properties: Properties, tags: object) -> None:
        style = TAG_STYLES[type]
        # A placeholder where the L1's renderer puts the tags (alphabetical order); CDK
        # fills it in place, or drops it when the resource ends up with no tags.
        placeholder: list[object] | dict[str, object] = {} if style.kind == cdk.TagType.MAP else []
        super().__init__(scope, id, type, {**properties, style.property: placeholder})
        self._tag_manager = cdk.TagManager(style.kind, type, tags, tag_property_name=style.property)

    @property
    def cdk_tag_manager(self) -> cdk.TagManager:
        return self._tag_manager


class AutoScalingGroupResource(TaggedResource):
    """TagManager renders Auto Scaling tags in the L1's camelCase; CloudFormation's spelling
    is what the L1's renderer would have made of them."""

    def _render_properties(self, props: Mapping[str, Any]) -> dict[str, Any]:
        rendered = dict(props)
        if "Tags" in rendered:
            rendered["Tags"] = [
                {"Key": tag["key"], "PropagateAtLaunch": tag["propagateAtLaunch"], "Value": tag["value"]}
                for tag in rendered["Tags"]
            ]
        return rendered


def resource(
    scope: Construct, id: str, type: str, properties: Properties, tags: Mapping[str, str] | None = None
) -> Resource:
    """The resource `type` at `scope/id`; `properties` in CloudFormation's spelling. `tags`
    are the ones the L1 would have been given (`Tags.of(...)` adds to them at synth, as to any L1)."""
    if type not in TAG_STYLES:
        if tags:
            raise ValueError(f"{type} takes no tags")
        return Resource(scope, id, type, properties)
    # KEY_VALUE and MAP both take their initial tags as {key: value}.
    return TaggedResource(scope, id, type, properties, None if tags is None else dict(tags))


def auto_scaling_group(
    scope: Construct, id: str, properties: Properties, tags: Mapping[str, str] | None = None
) -> Resource:
    """An Auto Scaling group; its own `tags` are not propagated to instances (the launch
    template tags them), those of `Tags.of(...)` are, as with the L1."""
    initial = (
        None
        if tags is None
        else [{"key": key, "value": value, "propagateAtLaunch": False} for key, value in tags.items()]
    )
    return AutoScalingGroupResource(scope, id, "AWS::AutoScaling::AutoScalingGroup", properties, initial)


def string_parameter(
    scope: Construct, id: str, name: str, value: str | Mapping[str, Any], description: str
) -> Resource:
    """An SSM String parameter (what ssm.CfnParameter with type String writes); `value` is a
    string or an intrinsic function that makes one."""
    properties = {"Description": description, "Name": name, "Type": "String", "Value": value}
    return resource(scope, id, "AWS::SSM::Parameter", properties)
