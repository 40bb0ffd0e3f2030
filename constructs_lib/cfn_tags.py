"""The tags of a resource built by gpucluster.constructs_lib.cfn, rendered as its L1 would have been.

An L1 is taggable: `Tags.of(app).add(...)` reaches it through CDK's TagManager. A core
CfnResource is not, and making one taggable from Python costs a jsii callback each time
CDK looks at its tags (some 260 a synth). So the tags are worked out here and written
into the properties, with CDK's rules: the cluster's tags (those `Tags.of(app)` adds in
gpucluster.synth.app) win over a resource's own, tags scoped to a subtree (an ec2.Vpc's
"Name") win over both, Auto Scaling propagates the cluster's tags to instances and not
its own, and keys are ordered by Node's `localeCompare`, which only Node can answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

import aws_cdk as cdk


@dataclass(frozen=True)
class TagStyle:
    """How a type's L1 (aws-cdk-lib's generated code) writes its tags."""

    shape: Literal["list", "map", "auto-scaling"] = "list"
    property: str = "Tags"


LIST = TagStyle()
# Every taggable type gpucluster builds; a type missing here is untaggable, as its L1 is.
TAG_STYLES: dict[str, TagStyle] = {
    "AWS::AutoScaling::AutoScalingGroup": TagStyle("auto-scaling"),
    "AWS::CloudWatch::Alarm": LIST,
    "AWS::CloudWatch::Dashboard": LIST,
    "AWS::EC2::EIP": LIST,
    "AWS::EC2::FlowLog": LIST,
    "AWS::EC2::Instance": LIST,
    "AWS::EC2::InternetGateway": LIST,
    "AWS::EC2::NatGateway": LIST,
    "AWS::EC2::PlacementGroup": LIST,
    "AWS::EC2::RouteTable": LIST,
    "AWS::EC2::SecurityGroup": LIST,
    "AWS::EC2::Subnet": LIST,
    "AWS::EC2::VPC": LIST,
    "AWS::EC2::VPCEndpoint": LIST,
    "AWS::EFS::FileSystem": TagStyle(property="FileSystemTags"),
    "AWS::FSx::FileSystem": LIST,
    "AWS::IAM::Role": LIST,
    "AWS::Logs::LogGroup": LIST,
    "AWS::RDS::DBInstance": LIST,
    "AWS::RDS::DBParameterGroup": LIST,
    "AWS::RDS::DBSubnetGroup": LIST,
    "AWS::Route53::HostedZone": TagStyle(property="HostedZoneTags"),
    "AWS::SNS::Topic": LIST,
    "AWS::SSM::Document": LIST,
    "AWS::SSM::Parameter": TagStyle("map"),
    "AWS::SecretsManager::Secret": LIST,
}

_cluster_tags: ContextVar[Mapping[str, str]] = ContextVar("cluster_tags", default=MappingProxyType({}))


class _KeyOrder:
    """Ranks of tag keys in CDK's order (TagManager sorts with JavaScript `localeCompare`),
    asked of Node once for each new set of keys: a TagManager renders them in that order."""

    def __init__(self) -> None:
        self._rank: dict[str, int] = {}

    def sorted(self, keys: list[str]) -> list[str]:
        if any(key not in self._rank for key in keys):
            known = {**self._rank, **dict.fromkeys(keys, 0)}
            manager = cdk.TagManager(cdk.TagType.KEY_VALUE, "gpucluster::TagOrder", dict.fromkeys(known, ""))
            rendered = manager.render_tags()
            self._rank = {tag["Key"]: rank for rank, tag in enumerate(rendered)}
        return sorted(keys, key=self._rank.__getitem__)


_ORDER = _KeyOrder()


@contextmanager
def tagging_every_resource(tags: Mapping[str, str], other_keys: Iterable[str] = ()) -> Iterator[None]:
    """Every taggable resource built inside carries `tags`, as `Tags.of(app).add` gives
    them to every L1 of the app. Naming the `other_keys` resources will carry asks Node
    for their order once, instead of once per new key."""
    _ORDER.sorted([*tags, *other_keys])
    token = _cluster_tags.set(dict(tags))
    try:
        yield
    finally:
        _cluster_tags.reset(token)


def with_tags(
    type: str,
    properties: Mapping[str, Any],
    own: Mapping[str, str] | None = None,
    scoped: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """`properties` with the tags a resource of `type` ends up with: its `own` (what its
    L1 was given), the cluster's, and `scoped` ones (what `Tags.of(subtree)` added)."""
    style = TAG_STYLES.get(type)
    if style is None:
        if own or scoped:
            raise ValueError(f"{type} takes no tags")
        return dict(properties)
    own = own or {}
    applied = {**_cluster_tags.get(), **(scoped or {})}
    tags = {**own, **applied}
    if not tags:
        return dict(properties)
    keys = _ORDER.sorted(list(tags))
    rendered: object
    if style.shape == "map":
        rendered = {key: tags[key] for key in keys}
    elif style.shape == "auto-scaling":
        # An Auto Scaling group's own tags stay on the group; Tags.of(...) propagates.
        rendered = [{"Key": k, "PropagateAtLaunch": k in applied, "Value": tags[k]} for k in keys]
    else:
        rendered = [{"Key": key, "Value": tags[key]} for key in keys]
    return {**properties, style.property: rendered}
