"""The AMI every node boots: a pinned id, or the SSM parameter resolved at deploy."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import Construct


def node_image_id(scope: Construct, ami_id: str | None, ssm_parameter: str) -> str:
    """`ami_id` when pinned, else the image `ssm_parameter` names at deploy."""
    if ami_id is not None:
        return ami_id
    parameter = cdk.CfnParameter(
        scope,
        "NodeImageId",
        type="AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>",
        default=ssm_parameter,
        description="AMI of every node; pin image.ami_id in the config to stop it changing",
    )
    return parameter.value_as_string
