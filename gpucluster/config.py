"""The cluster configuration: one YAML file, validated once, here.

Every other module receives a `ClusterConfig`; none re-checks what is checked
here. Field names are the public contract (DESIGN.md, "The user's contract").
"""

from __future__ import annotations

import ipaddress
import re
from datetime import UTC, datetime, time
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from gpucluster import capacity_block_rules, fsx_rules, placement_rules
from gpucluster.catalog import InstanceType, load_catalog
from gpucluster.mount_points import mount_point_problem
from gpucluster.slurm_time import MINUTES_PER_DAY, SlurmTimeError, format_minutes, parse_minutes
from gpucluster.validation_settings import ValidationConfig

DLAMI_UBUNTU_2404 = (
    "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-24.04/latest/ami-id"
)
CAPACITY_BLOCK_SIZES = (1, 2, 4, 8, 16, 32, 64)
CAPACITY_BLOCK_END_UTC = time(11, 30)
SLURM_NAME = re.compile(r"^[a-z][a-z0-9]{0,19}$")
INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")
RESERVATION_ID = re.compile(r"^cr-[0-9a-f]{17}$")
RESERVED_GROUP_NAMES = frozenset({"all", "default"})
# A job submitted without --time gets DefaultTime. Never INFINITE: a Capacity Block's
# end-of-block MAINT reservation exists for the whole block, and a job whose limit reaches
# into it never starts (FACTS.md, Slurm).
DEFAULT_TIME_MINUTES = 60
# MaxTime of groups not bound by a block: long enough for real training runs, short
# enough that a forgotten job does not hold nodes for ever.
DEFAULT_MAX_TIME_MINUTES = 7 * MINUTES_PER_DAY
SHA256 = re.compile(r"^[0-9a-f]{64}$")
# Python's is_private also admits loopback and link-local, which a VPC cannot use.
RFC1918 = tuple(ipaddress.IPv4Network(block) for block in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))


def _fail(kind: str, message: str, at: str | None = None) -> PydanticCustomError:
    """A validation error; `at` names the field when a model-level check finds it."""
    return PydanticCustomError(kind, message, {"at": at} if at else None)


def _fail_at(field: str, message: str) -> PydanticCustomError:
    """An error found by a model-level check, reported at `field` below the model."""
    return _fail("invalid", message, at=field)


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo must not silently fall back to a default."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


def _instance_type_name(value: str) -> str:
    if not INSTANCE_TYPE.match(value):
        raise _fail("instance_type", f"'{value}' is not an EC2 instance type; use a name like m7i.2xlarge")
    return value


InstanceTypeName = Annotated[str, AfterValidator(_instance_type_name)]


def _reservation_id(value: str) -> str:
    if not RESERVATION_ID.match(value):
        raise _fail(
            "reservation_id",
            f"'{value}' is not a capacity reservation id; it looks like cr-0123456789abcdef0 "
            "(cr- and 17 hex digits, as shown by `aws ec2 describe-capacity-reservations`)",
        )
    return value


ReservationId = Annotated[str, AfterValidator(_reservation_id)]


def _sha256(value: str) -> str:
    if not SHA256.match(value):
        raise _fail("sha256", "must be 64 lower-case hex digits (the output of sha256sum)")
    return value


Sha256 = Annotated[str, AfterValidator(_sha256)]


def _pgp_fingerprint(value: str) -> str:
    # gpg prints fingerprints in groups of four; accept that form and store the bare one.
    bare = value.replace(" ", "").upper()
    if not re.fullmatch(r"[0-9A-F]{40}", bare):
        raise _fail(
            "fingerprint", "must be a 40-hex-digit OpenPGP fingerprint (as `gpg --show-keys` prints it)"
        )
    return bare


PgpFingerprint = Annotated[str, AfterValidator(_pgp_fingerprint)]


class NetworkConfig(StrictModel):
    vpc_id: str | None = Field(
        default=None, description="Existing VPC to use; null creates a VPC from `cidr`."
    )
    subnet_id: str | None = Field(
        default=None,
        description="Private subnet in `availability_zone`; required with `vpc_id`.",
    )
    cidr: ipaddress.IPv4Network = Field(
        default=ipaddress.IPv4Network("10.80.0.0/16"),
        description="CIDR of the created VPC: private (RFC 1918), /16 to /22.",
    )

    @model_validator(mode="before")
    @classmethod
    def _no_ssh_ingress(cls, data: object) -> object:
        # Nodes live on private subnets with no route from the networks a user would
        # list, so the old setting opened port 22 to nobody while looking like access.
        if isinstance(data, dict) and "ssh_ingress_cidrs" in data:
            raise _fail_at(
                "ssh_ingress_cidrs",
                "was removed: nodes are on private subnets that those networks cannot reach; "
                "delete the key and connect with Session Manager (`aws ssm start-session "
                '--target <login instance id>`, see README "Deploying"); plain ssh works through it with '
                "a ProxyCommand that runs AWS-StartSSHSession",
            )
        return data

    @field_validator("vpc_id")
    @classmethod
    def _vpc_id_shape(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^vpc-[0-9a-f]{8,17}$", value):
            raise _fail("vpc_id", f"'{value}' is not a VPC id; expected vpc- and 8 or 17 hex digits")
        return value

    @field_validator("subnet_id")
    @classmethod
    def _subnet_id_shape(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^subnet-[0-9a-f]{8,17}$", value):
            raise _fail("subnet_id", f"'{value}' is not a subnet id; expected subnet- and 8 or 17 hex digits")
        return value

    @field_validator("cidr")
    @classmethod
    def _cidr_sane(cls, value: ipaddress.IPv4Network) -> ipaddress.IPv4Network:
        if not any(value.subnet_of(block) for block in RFC1918):
            raise _fail(
                "cidr",
                f"{value} is not a private range; use one inside 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16",
            )
        if not 16 <= value.prefixlen <= 22:
            raise _fail(
                "cidr",
                f"{value} has prefix /{value.prefixlen}; use /16 to /22 so the compute subnet "
                "has room for every node and EFA interface",
            )
        return value

    @model_validator(mode="after")
    def _imported_vpc_needs_subnet(self) -> NetworkConfig:
        if (self.vpc_id is None) != (self.subnet_id is None):
            raise _fail_at(
                "subnet_id",
                "vpc_id and subnet_id go together: set both to use an existing VPC "
                "(subnet_id a private subnet in availability_zone), or neither to create one",
            )
        return self


class ImageConfig(StrictModel):
    ssm_parameter: str = Field(
        default=DLAMI_UBUNTU_2404,
        description="SSM parameter with the AMI id, resolved at deploy when ami_id is null.",
    )
    ami_id: str | None = Field(
        default=None, description="Pinned AMI id (recommended): the image never changes under you."
    )
    kernel: str | None = Field(
        default=None,
        description="Kernel release (`uname -r`) the AMI boots; nodes that differ refuse to join.",
    )

    @field_validator("ami_id")
    @classmethod
    def _ami_shape(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^ami-[0-9a-f]{8,17}$", value):
            raise _fail("ami_id", f"'{value}' is not an AMI id; expected ami- and 8 or 17 hex digits")
        return value

    @field_validator("ssm_parameter")
    @classmethod
    def _ssm_supported_os(cls, value: str) -> str:
        if not value.startswith("/"):
            raise _fail("ssm_parameter", "must be an SSM parameter path starting with /")
        if "ubuntu-22.04" in value or "ubuntu-20.04" in value:
            raise _fail(
                "ssm_parameter",
                "Ubuntu 22.04 and older ship Slurm 21.08, which lacks dynamic nodes; "
                f"use the Ubuntu 24.04 Deep Learning AMI: {DLAMI_UBUNTU_2404}",
            )
        return value

    @field_validator("kernel")
    @classmethod
    def _kernel_shape(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^\d+\.\d+\.\d+-\d+-[a-z0-9]+$", value):
            raise _fail(
                "kernel",
                f"'{value}' is not a kernel release; use what `uname -r` prints, e.g. 6.8.0-1021-aws",
            )
        return value


class HeadNodeConfig(StrictModel):
    instance_type: InstanceTypeName = "m7i.2xlarge"
    root_volume_gib: int = Field(default=200, ge=64, le=16384)


class LoginNodesConfig(StrictModel):
    count: int = Field(default=1, ge=0, le=10)
    instance_type: InstanceTypeName = "m7i.xlarge"
    root_volume_gib: int = Field(default=200, ge=64, le=16384)


class OnDemandCapacity(StrictModel):
    type: Literal["on-demand"]


class OdcrCapacity(StrictModel):
    type: Literal["odcr"]
    reservation_id: ReservationId


class CapacityBlockCapacity(StrictModel):
    type: Literal["capacity-block"]
    reservation_id: ReservationId
    start: datetime = Field(description="Block start (UTC, ISO 8601), as EC2 reports it.")
    end: datetime = Field(description="Block end (UTC, ISO 8601); blocks end at 11:30 UTC.")

    @field_validator("start", "end")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise _fail(
                "timezone",
                "needs a time zone; write it in UTC like 2026-12-01T11:30:00Z",
            )
        return value.astimezone(UTC)

    @model_validator(mode="after")
    def _window(self, info: ValidationInfo) -> CapacityBlockCapacity:
        if self.start >= self.end:
            raise _fail_at(
                "start", f"start {self.start:%Y-%m-%dT%H:%MZ} must be before end {self.end:%Y-%m-%dT%H:%MZ}"
            )
        if self.end.timetz().replace(tzinfo=None) != CAPACITY_BLOCK_END_UTC:
            raise _fail_at(
                "end",
                f"end {self.end:%Y-%m-%dT%H:%MZ} is not at 11:30 UTC; every Capacity Block ends "
                "at 11:30 UTC: copy EndDate from `aws ec2 describe-capacity-reservations`",
            )
        problem = capacity_block_rules.duration_problem(self.start, self.end)
        if problem:
            raise _fail_at("end", problem)
        # The clock comes from the caller (`parse_config(now=...)`) or GPUCLUSTER_NOW so
        # tests and reproducible CI do not expire with the calendar.
        now = capacity_block_rules.current_time((info.context or {}).get("now"))
        problem = capacity_block_rules.expiry_problem(self.end, now)
        if problem:
            raise _fail_at("end", problem)
        return self


Capacity = Annotated[OnDemandCapacity | OdcrCapacity | CapacityBlockCapacity, Field(discriminator="type")]


class ComputeGroupConfig(StrictModel):
    name: str = Field(description="Slurm partition and feature name: lower-case letters and digits.")
    instance_type: InstanceTypeName
    count: PositiveInt = Field(le=1024)
    capacity: Capacity = Field(default_factory=lambda: OnDemandCapacity(type="on-demand"))
    placement_group: Literal["auto"] | bool | str = Field(
        default="auto",
        description="auto: a new cluster placement group for on-demand groups, none for ODCR "
        "and Capacity Blocks. true forces a new one, false turns it off. ODCR: the name of the "
        "existing placement group the reservation was made in, or auto/false for none.",
    )
    efa: bool = Field(default=True, description="Attach every EFA interface the type has.")
    root_volume_gib: int = Field(default=512, ge=100, le=16384)
    default_time: int = Field(
        default=DEFAULT_TIME_MINUTES,
        description="Slurm DefaultTime of the group's partition: the limit of a job submitted "
        'without --time. Minutes, or a quoted Slurm time ("HH:MM:SS", "D-HH:MM").',
    )
    max_time: int | None = Field(
        default=None,
        description="Slurm MaxTime of the group's partition. Default: the block's duration for "
        "a Capacity Block (at most that), else 7 days.",
    )

    @field_validator("default_time", "max_time", mode="before")
    @classmethod
    def _slurm_time(cls, value: object, info: ValidationInfo) -> object:
        if value is None:
            return value
        try:
            return parse_minutes(value, str(info.field_name))
        except SlurmTimeError as error:
            raise _fail("time", str(error)) from None

    @field_validator("placement_group", mode="before")
    @classmethod
    def _placement_choice(cls, value: object) -> object:
        # One clear message instead of one per member of the union.
        problem = placement_rules.choice_problem(value)
        if problem:
            raise _fail("placement_group", problem)
        return value

    @field_validator("name")
    @classmethod
    def _slurm_safe(cls, value: str) -> str:
        if not SLURM_NAME.match(value):
            raise _fail(
                "name",
                f"'{value}' is not a usable group name; use 1-20 lower-case letters and digits "
                "starting with a letter (it becomes a Slurm partition, node-name prefix and feature)",
            )
        if value in RESERVED_GROUP_NAMES:
            raise _fail(
                "name",
                f"'{value}' is reserved ('all' is the partition spanning every group; Slurm reads "
                "'default' as settings for other partitions); pick another name",
            )
        return value

    @model_validator(mode="after")
    def _catalog_rules(self) -> ComputeGroupConfig:
        catalog = load_catalog()
        if self.instance_type not in catalog:
            raise _fail_at(
                "instance_type",
                f"{self.instance_type} is not in the GPU instance catalog; "
                f"choose one of: {', '.join(catalog.names())}",
            )
        info = catalog.get(self.instance_type)
        if self.efa and not info.efa_supported:
            raise _fail_at("efa", f"{self.instance_type} has no EFA; set efa: false or pick an EFA type")
        problem = placement_rules.group_problem(self.capacity.type, self.placement_group)
        if problem:
            raise _fail_at("placement_group", problem)
        if isinstance(self.capacity, CapacityBlockCapacity):
            if not info.capacity_block_supported:
                raise _fail_at(
                    "capacity",
                    f"Capacity Blocks are not sold for {self.instance_type}; use type on-demand or odcr",
                )
            if self.count > max(CAPACITY_BLOCK_SIZES):
                raise _fail_at(
                    "count",
                    f"{self.count} nodes exceed the largest Capacity Block (64); "
                    "split the nodes into several groups, one per block",
                )
        self._time_limits()
        return self

    def _time_limits(self) -> None:
        block = self.block_minutes
        if block is not None and self.max_time is not None and self.max_time > block:
            raise _fail_at(
                "max_time",
                f"max_time {format_minutes(self.max_time)} is longer than the Capacity Block "
                f"({format_minutes(block)}); no job can run past the block's end",
            )
        if self.default_time > self.max_time_minutes:
            raise _fail_at(
                "default_time",
                f"default_time {format_minutes(self.default_time)} exceeds max_time "
                f"{format_minutes(self.max_time_minutes)}; Slurm would reject every job "
                "submitted without --time",
            )

    @property
    def block_minutes(self) -> int | None:
        """A Capacity Block's length in minutes; None for other capacity."""
        if not isinstance(self.capacity, CapacityBlockCapacity):
            return None
        return int((self.capacity.end - self.capacity.start).total_seconds() // 60)

    @property
    def max_time_minutes(self) -> int:
        """The partition's MaxTime: as set, else the block's length, else 7 days."""
        if self.max_time is not None:
            return self.max_time
        block = self.block_minutes
        return block if block is not None else DEFAULT_MAX_TIME_MINUTES

    @property
    def instance(self) -> InstanceType:
        return load_catalog().get(self.instance_type)

    @property
    def is_capacity_block(self) -> bool:
        return isinstance(self.capacity, CapacityBlockCapacity)

    @property
    def existing_placement_group(self) -> str | None:
        """The placement group an ODCR was made in, launched into as is (never created)."""
        if isinstance(self.placement_group, str) and self.placement_group != "auto":
            return self.placement_group
        return None

    @property
    def creates_placement_group(self) -> bool:
        # An ODCR made in a cluster placement group serves launches into that group
        # only, and one made outside any group is not co-located: ODCR never gets a
        # new group (see placement_rules).
        if isinstance(self.capacity, OdcrCapacity):
            return False
        if self.placement_group == "auto":
            return not self.is_capacity_block
        return self.placement_group is True

    @property
    def uses_placement_group(self) -> bool:
        return self.creates_placement_group or self.existing_placement_group is not None


FSX_THROUGHPUT = {
    "PERSISTENT_1": (50, 100, 200),
    "PERSISTENT_2": (125, 250, 500, 1000),
}


class FsxLustreConfig(StrictModel):
    storage_gib: int = Field(
        default=4800, description="1200, 2400, then multiples of 2400 (SCRATCH_1: +3600)."
    )
    deployment_type: Literal["SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"] = "PERSISTENT_2"
    throughput_per_tib: int | None = Field(
        default=250,
        description="MB/s per TiB; PERSISTENT_1 50/100/200, PERSISTENT_2 125/250/500/1000; null for SCRATCH.",
    )
    compression: Literal["LZ4", "NONE"] = "LZ4"
    efa: bool = Field(
        default=False,
        description="EFA-enabled file system (PERSISTENT_2 only, set at creation); storage_gib in "
        "multiples of 38400/19200/9600/4800 for 125/250/500/1000 MB/s/TiB.",
    )
    metadata_iops: int | None = Field(
        default=None,
        description="PERSISTENT_2 metadata IOPS: 1500, 3000, 6000, 12000, then multiples of 12000 "
        "to 192000; null: automatic.",
    )
    mount_point: str = "/fsx"

    @model_validator(mode="after")
    def _fsx_rules(self) -> FsxLustreConfig:
        size = self.storage_gib
        if self.deployment_type == "SCRATCH_1":
            valid = size in (1200, 2400) or (size > 2400 and (size - 2400) % 3600 == 0)
            hint = "1200, 2400, or 2400 plus a multiple of 3600"
        else:
            valid = size in (1200, 2400) or (size > 2400 and size % 2400 == 0)
            hint = "1200, 2400, or a multiple of 2400"
        if not valid:
            raise _fail_at(
                "storage_gib", f"{size} GiB is not a valid {self.deployment_type} size; use {hint}"
            )
        allowed = FSX_THROUGHPUT.get(self.deployment_type)
        if allowed is None and self.throughput_per_tib is not None:
            raise _fail_at(
                "throughput_per_tib",
                f"{self.deployment_type} has no throughput setting; set throughput_per_tib: null",
            )
        if allowed is not None and self.throughput_per_tib not in allowed:
            raise _fail_at(
                "throughput_per_tib",
                f"{self.throughput_per_tib} is not offered for {self.deployment_type}; "
                f"use one of {', '.join(map(str, allowed))}",
            )
        if self.efa and self.deployment_type != "PERSISTENT_2":
            raise _fail_at("efa", "EFA-enabled FSx for Lustre needs deployment_type PERSISTENT_2")
        if self.metadata_iops is not None:
            if self.deployment_type != "PERSISTENT_2":
                raise _fail_at("metadata_iops", "metadata_iops applies to PERSISTENT_2 only; remove it")
            problem = fsx_rules.metadata_iops_problem(self.metadata_iops)
            if problem:
                raise _fail_at("metadata_iops", problem)
        if self.efa:
            problem = fsx_rules.efa_capacity_problem(size, self.throughput_per_tib)
            if problem:
                raise _fail_at("storage_gib", problem)
        problem = mount_point_problem(self.mount_point)
        if problem:
            raise _fail_at("mount_point", problem)
        return self


class StorageConfig(StrictModel):
    fsx_lustre: FsxLustreConfig | None = Field(default_factory=FsxLustreConfig)


class SoftwareConfig(StrictModel):
    """Pinned node software. Each checksum default is the sha256 published for the file of the
    default version; a node refuses to install a download whose sha256 differs."""

    slurm: str = Field(
        default="23.11.4",
        description="Slurm release the image's distribution ships (`sinfo --version`).",
    )
    enroot_version: str = "4.2.1"
    enroot_sha256: Sha256 = Field(
        default="5955c51e88df0c5ed538d87abb5264609d4bad55fa8570745ed5d4ec66c8ab91",
        description="sha256 of enroot_<version>-1_amd64.deb.",
    )
    enroot_caps_sha256: Sha256 = Field(
        default="ca22652dcbdd3ebb6e2c68df781ef4301647c79dd7a41ed62899c2fd0f692750",
        description="sha256 of enroot+caps_<version>-1_amd64.deb.",
    )
    pyxis_version: str = "0.24.0"
    pyxis_sha256: Sha256 = Field(
        default="9c4cdb79a67301d8ea05951aa4d2c205f40cf6145e338214b0191add8b36d6c4",
        description="sha256 of the pyxis v<version> source tarball (GitHub archive of the tag).",
    )
    lustre_repo_key_fingerprint: PgpFingerprint | None = Field(
        default=None,
        description=(
            "Fingerprint of the FSx Lustre client repository key (fsx-ubuntu-public-key.asc). "
            "Nodes whose kernel lacks a Lustre client module install one from that repository "
            "only when this is set; the FSx guide publishes no fingerprint for the Ubuntu key."
        ),
    )

    @field_validator("slurm")
    @classmethod
    def _slurm_release(cls, value: str) -> str:
        match = re.match(r"^(\d+)\.(\d+)\.(\d+)$", value)
        if not match:
            raise _fail("slurm", f"'{value}' is not a Slurm release; write it like 23.11.4")
        if (int(match[1]), int(match[2])) < (22, 5):
            raise _fail("slurm", f"Slurm {value} lacks dynamic nodes (22.05+); use the image's newer Slurm")
        return value

    @field_validator("enroot_version", "pyxis_version")
    @classmethod
    def _semver(cls, value: str) -> str:
        if not re.match(r"^\d+\.\d+\.\d+$", value):
            raise _fail("version", f"'{value}' is not a release number; write it like 3.5.0")
        return value

    @model_validator(mode="after")
    def _checksum_follows_version(self) -> SoftwareConfig:
        # A changed version with the default checksum would only fail on the node, at boot.
        pins = (
            ("enroot_version", ("enroot_sha256", "enroot_caps_sha256")),
            ("pyxis_version", ("pyxis_sha256",)),
        )
        fields = type(self).model_fields
        for version_field, checksum_fields in pins:
            if getattr(self, version_field) == fields[version_field].default:
                continue
            for checksum_field in checksum_fields:
                if getattr(self, checksum_field) == fields[checksum_field].default:
                    raise _fail_at(
                        checksum_field,
                        f"{version_field} is {getattr(self, version_field)} but {checksum_field} "
                        f"is still the checksum of {fields[version_field].default}; set it to the "
                        "sha256 published for the new version",
                    )
        return self


class ClusterConfig(StrictModel):
    name: str = Field(description="Lower-case cluster name, used in stack names.")
    region: str
    availability_zone: str = Field(description="EFA and Capacity Blocks are single-AZ: everything runs here.")
    account: str | None = Field(
        default=None, description="AWS account id; null deploys to the CLI's account."
    )
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    image: ImageConfig = Field(default_factory=ImageConfig)
    head_node: HeadNodeConfig = Field(default_factory=HeadNodeConfig)
    login_nodes: LoginNodesConfig = Field(default_factory=LoginNodesConfig)
    compute_groups: list[ComputeGroupConfig] = Field(min_length=1, max_length=16)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    software: SoftwareConfig = Field(default_factory=SoftwareConfig)
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    tags: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not re.match(r"^[a-z][a-z0-9-]{0,19}$", value) or value.endswith("-"):
            raise _fail(
                "name",
                f"'{value}' is not a usable cluster name; use 1-20 lower-case letters, digits and "
                "hyphens, starting with a letter",
            )
        return value

    @field_validator("region")
    @classmethod
    def _region(cls, value: str) -> str:
        if not re.match(r"^[a-z]{2}(-gov)?-[a-z]+-\d$", value):
            raise _fail("region", f"'{value}' is not an AWS region name; use one like us-east-2")
        return value

    @field_validator("account", mode="before")
    @classmethod
    def _account_quoted(cls, value: object) -> object:
        # Unquoted, YAML reads the id as a number (dropping leading zeros) and the str
        # check would fail first with a generic message: say what to write instead.
        if isinstance(value, int) and not isinstance(value, bool):
            raise _fail(
                "account",
                f"{value} was read as a number; quote the 12-digit account id, "
                f'e.g. account: "{value:012d}"',
            )
        return value

    @field_validator("account")
    @classmethod
    def _account(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^\d{12}$", value):
            raise _fail("account", "an AWS account id is 12 digits; quote it in YAML")
        return value

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: dict[str, str]) -> dict[str, str]:
        for key, tag_value in value.items():
            if key.lower().startswith(("aws:", "gpucluster:")):
                raise _fail(
                    "tags", f"tag key '{key}' uses a reserved prefix (aws: or gpucluster:); rename it"
                )
            # Nodes read their tags from instance metadata, which refuses keys
            # with spaces or '/' and then fails the launch.
            if not re.match(r"^[A-Za-z0-9+\-=._:@]{1,128}$", key):
                raise _fail(
                    "tags",
                    f"tag key '{key}' may only hold letters, digits and + - = . _ : @ (no spaces or /), "
                    "1-128 characters, because instances expose their tags in instance metadata",
                )
            if len(tag_value) > 256:
                raise _fail("tags", f"the value of tag '{key}' is longer than 256 characters")
        return value

    @model_validator(mode="after")
    def _cross_field(self) -> ClusterConfig:
        if not re.match(rf"^{re.escape(self.region)}[a-z]$", self.availability_zone):
            raise _fail_at(
                "availability_zone",
                f"{self.availability_zone} is not in region {self.region}; use the region name "
                "plus a letter, e.g. " + f"{self.region}a",
            )
        names = [group.name for group in self.compute_groups]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise _fail_at("compute_groups", f"group names must be unique; repeated: {', '.join(dupes)}")
        fsx = self.storage.fsx_lustre
        if fsx is not None and fsx.efa:
            for group in self.compute_groups:
                if not group.efa:
                    raise _fail_at(
                        "storage.fsx_lustre.efa",
                        f"EFA-enabled FSx needs EFA clients, but group {group.name} has efa: false",
                    )
        return self

    def warnings(self) -> list[str]:
        """Legal but risky choices: printed by `validate` and `synth`, never fatal."""
        notes: list[str] = []
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
