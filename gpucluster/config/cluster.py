"""The root of the config: `ClusterConfig`, its own fields and the checks that span sections."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from gpucluster.agents.cluster_names import CLUSTER_NAME
from gpucluster.config import subnet_addresses
from gpucluster.config.accounting import AccountingConfig, munge_secret_region_problem
from gpucluster.config.accounting_database import placement_problem
from gpucluster.config.fields import StrictModel, fail, fail_at, matching
from gpucluster.config.health import HealthConfig
from gpucluster.config.image import ImageConfig
from gpucluster.config.monitoring import MonitoringConfig
from gpucluster.config.network import NetworkConfig
from gpucluster.config.nodes import ComputeGroupConfig, HeadNodeConfig, LoginNodesConfig
from gpucluster.config.orchestrator import Orchestrator
from gpucluster.config.orchestrator import refusal as orchestrator_refusal
from gpucluster.config.reservation_rules import shared_reservation_problem
from gpucluster.config.rest_api import RestApiConfig
from gpucluster.config.software import SoftwareConfig
from gpucluster.config.storage import StorageConfig
from gpucluster.config.users import UserConfig, membership_problem, users_problem
from gpucluster.config.validation import ValidationConfig

Region = Annotated[
    str,
    matching(
        r"^[a-z]{2}(-gov)?-[a-z]+-\d$",
        "region",
        "'{value}' is not an AWS region name; use one like us-east-2",
    ),
]
AccountId = Annotated[
    str, matching(r"^\d{12}$", "account", "an AWS account id is 12 digits; quote it in YAML")
]


class ClusterConfig(StrictModel):
    name: str = Field(description="Lower-case cluster name, used in stack names.")
    region: Region
    availability_zone: str = Field(description="EFA and Capacity Blocks are single-AZ: everything runs here.")
    account: AccountId | None = Field(
        default=None, description="AWS account id; null deploys to the CLI's account."
    )
    orchestrator: Orchestrator = Field(
        default="ec2",
        description="ec2: a Slurm head node, login nodes and Auto Scaling groups; eks: an EKS cluster "
        "whose managed node groups carry the compute groups, Slurm running in it through Slinky.",
    )
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    image: ImageConfig = Field(default_factory=ImageConfig)
    head_node: HeadNodeConfig = Field(default_factory=HeadNodeConfig)
    login_nodes: LoginNodesConfig = Field(default_factory=LoginNodesConfig)
    compute_groups: list[ComputeGroupConfig] = Field(min_length=1, max_length=16)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    software: SoftwareConfig = Field(default_factory=SoftwareConfig)
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    monitoring: MonitoringConfig = Field(default_factory=MonitoringConfig)
    accounting: AccountingConfig | None = Field(
        default=None,
        description="Slurm accounting (slurmdbd, sacct, accounts, QOS, fair share); null: off.",
    )
    rest_api: RestApiConfig | None = Field(
        default=None,
        description="slurmrestd on the head node with JSON Web Tokens, reachable from the networks "
        "and security groups listed; null: off.",
    )
    health: HealthConfig = Field(default_factory=HealthConfig)
    users: list[UserConfig] = Field(
        default_factory=list,
        description="The people of the cluster: every node creates their accounts with the same uid "
        "and gid; empty: accounts come from elsewhere (a directory service).",
    )
    tags: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not re.fullmatch(CLUSTER_NAME, value):
            raise fail(
                "name",
                f"'{value}' is not a usable cluster name; use 1-20 lower-case letters, digits and "
                "hyphens, starting with a letter",
            )
        return value

    @field_validator("account", mode="before")
    @classmethod
    def _account_quoted(cls, value: object) -> object:
        # Unquoted, YAML reads the id as a number (dropping leading zeros) and the str
        # check would fail first with a generic message: say what to write instead.
        if isinstance(value, int) and not isinstance(value, bool):
            raise fail(
                "account",
                f'{value} was read as a number; quote the 12-digit account id, e.g. account: "{value:012d}"',
            )
        return value

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: dict[str, str]) -> dict[str, str]:
        for key, tag_value in value.items():
            if key.lower().startswith(("aws:", "gpucluster:")):
                raise fail("tags", f"tag key '{key}' uses a reserved prefix (aws: or gpucluster:); rename it")
            # Nodes read their tags from instance metadata, which refuses keys
            # with spaces or '/' and then fails the launch.
            if not re.match(r"^[A-Za-z0-9+\-=._:@]{1,128}$", key):
                raise fail(
                    "tags",
                    f"tag key '{key}' may only hold letters, digits and + - = . _ : @ (no spaces or /), "
                    "1-128 characters, because instances expose their tags in instance metadata",
                )
            if len(tag_value) > 256:
                raise fail("tags", f"the value of tag '{key}' is longer than 256 characters")
        return value

    @model_validator(mode="after")
    def _cross_field(self) -> ClusterConfig:
        if not re.match(rf"^{re.escape(self.region)}[a-z]$", self.availability_zone):
            raise fail_at(
                "availability_zone",
                f"{self.availability_zone} is not in region {self.region}; use the region name "
                "plus a letter, e.g. " + f"{self.region}a",
            )
        refused = orchestrator_refusal(self)
        if refused:
            raise fail_at(*refused)
        names = [group.name for group in self.compute_groups]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise fail_at("compute_groups", f"group names must be unique; repeated: {', '.join(dupes)}")
        shared = shared_reservation_problem(self.compute_groups)
        if shared:
            raise fail_at(*shared)
        fsx = self.storage.fsx_lustre
        if fsx is not None and fsx.efa:
            for group in self.compute_groups:
                if not group.efa:
                    raise fail_at(
                        "storage.fsx_lustre.efa",
                        f"EFA-enabled FSx needs EFA clients, but group {group.name} has efa: false",
                    )
        self._accounting_placement()
        found = users_problem(self.users) or membership_problem(self.users, self.accounting)
        if found:
            raise fail_at(*found)
        problem = subnet_addresses.created_subnet_problem(self)
        if problem:
            raise fail_at("network.cidr", problem)
        if self.software.training_image and not self.software.image_dir and fsx is None:
            # The imported squashfs must sit where every node reads it.
            raise fail_at(
                "software.image_dir",
                "software.training_image is set but there is no shared directory for its squashfs; "
                "set software.image_dir (e.g. /home/images) or add storage.fsx_lustre",
            )
        return self

    def _accounting_placement(self) -> None:
        secret = None if self.accounting is None else self.accounting.munge_key_secret
        wrong_region = None if secret is None else munge_secret_region_problem(secret, self.region)
        if wrong_region:
            raise fail_at("accounting.munge_key_secret", wrong_region)
        database = None if self.accounting is None else self.accounting.database
        if database is None:
            return
        found = placement_problem(
            database,
            cluster=self.name,
            region=self.region,
            availability_zone=self.availability_zone,
            existing_vpc=self.network.vpc_id is not None,
        )
        if found:
            field, message = found
            raise fail_at(field, message)

    def warnings(self) -> list[str]:
        """Legal but risky choices: printed by `validate` and `synth`, never fatal."""
        notes: list[str] = []
        if self.orchestrator != "ec2":  # the image notes speak of the EC2 nodes' AMI
            return notes
        if self.image.ami_id is None:
            notes.append(
                "image.ami_id: not pinned; the AMI follows the SSM parameter at every deploy and a "
                "new image can bring a new kernel. Pin the AMI id you tested."
            )
        if self.image.kernel is None:
            notes.append(
                "image.kernel: not set; nodes cannot verify they booted the kernel you tested. "
                "Set it to `uname -r` of the pinned AMI."
            )
        for index, group in enumerate(self.compute_groups):
            if group.is_capacity_block and group.placement_group is True:
                notes.append(
                    f"compute_groups.{index}.placement_group: forced on a Capacity Block group; "
                    "block instances are already co-located and a placement group can make "
                    "launches fail with insufficient capacity"
                )
        return notes
