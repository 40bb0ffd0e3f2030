"""Pin image.ami_id from the config's SSM parameter, and image.kernel from the cluster.

An SSM parameter like the DLAMI's `latest/ami-id` moves with every release, and a new
image can bring a new kernel that breaks GPUDirect RDMA or the Lustre client
(FACTS.md, "Deep Learning AMI"). `pin` resolves the parameter once and writes the id
(with the image's name and date as a comment) into the config. The kernel is only
known once a machine boots the image: the head node publishes `uname -r` with its
AMI id (names.head_image_parameter), and `pin --kernel-from-cluster` copies it in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpucluster import names
from gpucluster.aws.clients import Clients
from gpucluster.aws.errors import AwsError, aws_call
from gpucluster.bad_input import BadInput
from gpucluster.config import ClusterConfig
from gpucluster.config.edit import Edit


@dataclass(frozen=True)
class Image:
    ami_id: str
    name: str
    created: str
    architecture: str

    @property
    def comment(self) -> str:
        return f"{self.name}, created {self.created[:10]}"


def describe_image(clients: Clients, region: str, ami_id: str) -> Image | None:
    """The image, or None when this account cannot see it in `region`."""
    from botocore.exceptions import ClientError

    ec2 = clients.get("ec2", region)
    with aws_call("ec2:DescribeImages", region):
        try:
            images: list[dict[str, Any]] = ec2.describe_images(ImageIds=[ami_id]).get("Images", [])
        except ClientError as exc:
            # An id that is not there (or not shared with the account) is an error of EC2's,
            # InvalidAMIID.NotFound or .Unavailable; the callers say what to do about it.
            if not str(exc.response.get("Error", {}).get("Code", "")).startswith("InvalidAMIID"):
                raise
            images = []
    if not images:
        return None
    raw = images[0]
    return Image(ami_id, raw.get("Name", ""), raw.get("CreationDate", ""), raw.get("Architecture", ""))


def resolve_parameter(clients: Clients, region: str, parameter: str) -> str:
    ssm = clients.get("ssm", region)
    with aws_call("ssm:GetParameter", region):
        value: str = ssm.get_parameter(Name=parameter)["Parameter"]["Value"]
    return value


def resolve(clients: Clients, cfg: ClusterConfig) -> Image:
    """The image the config's SSM parameter names today."""
    ami_id = resolve_parameter(clients, cfg.region, cfg.image.ssm_parameter)
    image = describe_image(clients, cfg.region, ami_id)
    if image is None:
        raise AwsError(
            "ec2:DescribeImages",
            cfg.region,
            f"{ami_id} (from {cfg.image.ssm_parameter}) is not visible",
            "the parameter names an image this account cannot use; check image.ssm_parameter",
        )
    return image


def head_image(clients: Clients, cfg: ClusterConfig) -> tuple[str, str]:
    """(ami_id, kernel) the cluster's head node published at boot."""
    parameter = names.head_image_parameter(cfg)
    try:
        raw = resolve_parameter(clients, cfg.region, parameter)
    except AwsError as exc:
        if "ParameterNotFound" not in exc.line:
            raise
        raise AwsError(
            "ssm:GetParameter",
            cfg.region,
            f"{parameter} does not exist",
            f"deploy cluster {cfg.name} and let its head node boot (it writes the parameter), then re-run",
        ) from None
    if raw == names.HEAD_IMAGE_NOT_RECORDED:
        raise AwsError(
            "ssm:GetParameter",
            cfg.region,
            f"{parameter} is not recorded yet",
            f"the head node of {cfg.name} writes it when it boots: wait until it is up "
            "(a head deployed before the stack made this parameter writes it when it applies "
            "the next bundle, or at its next boot), then re-run",
        )
    try:
        data = json.loads(raw)
        return str(data["ami_id"]), str(data["kernel"])
    except (ValueError, KeyError, TypeError):
        raise AwsError(
            "ssm:GetParameter",
            cfg.region,
            f"{parameter} holds {raw[:80]!r}, not the head's JSON",
            "reboot the head node or rerun its bootstrap to rewrite it",
        ) from None


def pin_edits(clients: Clients, cfg: ClusterConfig, source: Path, kernel_from_cluster: bool) -> list[Edit]:
    if not kernel_from_cluster:
        image = resolve(clients, cfg)
        return [Edit(("image", "ami_id"), image.ami_id, comment=image.comment)]
    ami_id, kernel = head_image(clients, cfg)
    if cfg.image.ami_id is not None and cfg.image.ami_id != ami_id:
        raise BadInput(
            source,
            "image.ami_id",
            f"is {cfg.image.ami_id} but the cluster's head booted {ami_id}, so its kernel {kernel} "
            "may not be the pinned image's",
            "deploy the pinned AMI first (the head reboots into it), then re-run",
        )
    edits = [Edit(("image", "kernel"), kernel, comment=f"uname -r on {ami_id}")]
    if cfg.image.ami_id is None:
        booted = describe_image(clients, cfg.region, ami_id)
        edits.insert(0, Edit(("image", "ami_id"), ami_id, comment=booted.comment if booted else None))
    return edits
