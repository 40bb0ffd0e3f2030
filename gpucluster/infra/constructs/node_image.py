"""The AMI every node boots: a pinned id, or the SSM parameter resolved at deploy."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import Construct

from gpucluster.config import ImageConfig


def node_image_id(scope: Construct, image: ImageConfig) -> str:
    if image.ami_id is not None:
        return image.ami_id
    parameter = cdk.CfnParameter(
        scope,
        "NodeImageId",
        type="AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>",
        default=image.ssm_parameter,
        description="AMI of every node; pin image.ami_id in the config to stop it changing",
    )
    return parameter.value_as_string
