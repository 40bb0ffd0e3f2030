"""What every config section is built from: the strict base model, the error helpers and
the constrained strings (instance types, AWS ids, checksums); `matching` makes one.

Types are strict everywhere (`StrictModel`): YAML already gives numbers, booleans and
text their own types, so a boolean is never read as a number (`count: true` would be 1)
and text is never read as a boolean (`efa: "yes"`). Only values YAML has no type for,
CIDR blocks, and timestamps a user may quote, are read from text (`from_text`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Strict, ValidationInfo
from pydantic_core import PydanticCustomError

from gpucluster.config.slurm_time import SlurmTimeError, parse_minutes
from gpucluster.config.type_errors import given


def fail(kind: str, message: str, at: str | None = None) -> PydanticCustomError:
    """A validation error; `at` names the field when a model-level check finds it."""
    return PydanticCustomError(kind, message, {"at": at} if at else None)


def fail_at(field: str, message: str) -> PydanticCustomError:
    """An error found by a model-level check, reported at `field` below the model."""
    return fail("invalid", message, at=field)


STRICT_CONFIG = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True, strict=True)


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo must not silently fall back to a default. Values keep
    the type YAML gave them: no boolean becomes a number, no text a boolean or a number."""

    model_config = STRICT_CONFIG


def from_text(kind: type, expected: str) -> tuple[BeforeValidator, Strict]:
    """Annotations for a field of `kind` that YAML delivers as text (a CIDR block, a quoted
    timestamp): text or a `kind` is read as in lax mode; a number or a boolean, which lax mode
    would also turn into a `kind` (`cidr: 10` is 0.0.0.10/32), is refused as `expected`."""

    def only_text(value: Any) -> Any:
        if isinstance(value, str | kind):
            return value
        raise fail(f"{kind.__name__.lower()}_type", f"must be {expected}, not {given(value)}")

    return BeforeValidator(only_text), Strict(False)


def matching(pattern: str, kind: str, message: str) -> AfterValidator:
    """A string that must match `pattern`; else a `kind` error saying `message` ({value}: the input)."""
    shape = re.compile(pattern)

    def check(value: str) -> str:
        if not shape.match(value):
            raise fail(kind, message.format(value=value))
        return value

    return AfterValidator(check)


def _aws_id(prefix: str, noun: str) -> AfterValidator:
    """An EC2 resource id such as vpc-0abc...: the prefix, a hyphen and 8 to 17 hex digits."""
    return matching(
        rf"^{prefix}-[0-9a-f]{{8,17}}$",
        f"{prefix}_id",
        f"'{{value}}' is not {noun}; expected {prefix}- and 8 or 17 hex digits",
    )


InstanceTypeName = Annotated[
    str,
    matching(
        r"^[a-z][a-z0-9-]*\.[a-z0-9]+$",
        "instance_type",
        "'{value}' is not an EC2 instance type; use a name like m7i.2xlarge",
    ),
]
ReservationId = Annotated[
    str,
    matching(
        r"^cr-[0-9a-f]{17}$",
        "reservation_id",
        "'{value}' is not a capacity reservation id; it looks like cr-0123456789abcdef0 "
        "(cr- and 17 hex digits, as shown by `aws ec2 describe-capacity-reservations`)",
    ),
]
VpcId = Annotated[str, _aws_id("vpc", "a VPC id")]
SubnetId = Annotated[str, _aws_id("subnet", "a subnet id")]
AmiId = Annotated[str, _aws_id("ami", "an AMI id")]
SecurityGroupId = Annotated[str, _aws_id("sg", "a security group id")]
Sha256 = Annotated[
    str, matching(r"^[0-9a-f]{64}$", "sha256", "must be 64 lower-case hex digits (the output of sha256sum)")
]


def _pgp_fingerprint(value: str) -> str:
    # gpg prints fingerprints in groups of four; accept that form and store the bare one.
    bare = value.replace(" ", "").upper()
    if not re.fullmatch(r"[0-9A-F]{40}", bare):
        raise fail(
            "fingerprint", "must be a 40-hex-digit OpenPGP fingerprint (as `gpg --show-keys` prints it)"
        )
    return bare


PgpFingerprint = Annotated[str, AfterValidator(_pgp_fingerprint)]


def slurm_minutes(value: object, info: ValidationInfo) -> object:
    """A `mode="before"` validator of a Slurm time limit (gpucluster.config.slurm_time): whole
    minutes, or None left as it is. Shared: `field_validator(NAMES, mode="before")(slurm_minutes)`."""
    if value is None:
        return value
    try:
        return parse_minutes(value, str(info.field_name))
    except SlurmTimeError as error:
        raise fail("time", str(error)) from None
