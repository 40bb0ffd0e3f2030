"""What CloudFormation cannot do in place to a stateful resource, as AWS documents it: the
one table the diff applies, and `validate --baseline` through it.

Each rule says what a change to one property does:
- REPLACES: the CloudFormation Template Reference says "Update requires: Replacement" for a
  nested property that the registry schema cfn-lint ships leaves out of
  createOnlyProperties; resource_schemas.update_rules treats it as create-only.
- FIXED: the service sets it only at creation (its update API takes no such parameter),
  while the Template Reference documents an in-place update ("No interruption"): the
  resource is not replaced and cannot be changed, so the stack update fails and rolls back.
- GROWS: the service changes it in place in one direction, in the steps it offers
  (storage, a Lustre version, metadata IOPS); a step back or off those steps fails the
  update the same way.

A FIXED or GROWS change is not data at risk (nothing is replaced) but it cannot deploy,
so the diff refuses it as bad input naming the config setting (exit 2), never "safe".
Create-only properties the schema declares (EFS PerformanceMode, Encrypted, KmsKeyId,
AvailabilityZoneName; FSx KmsKeyId, SubnetIds, SecurityGroupIds, BackupId; the munge
secret's Name; the accounting database's DBInstanceIdentifier, StorageEncrypted, KmsKeyId,
DBSubnetGroupName, MasterUsername and DBName, and its Engine, which the schema says may
replace it) come from the schema, not from here. Limits that depend on time (one FSx
storage increase per 6 hours, EFS throughput changes once a day) cannot be judged offline.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gpucluster.config import fsx_rules
from gpucluster.diff.template_values import MISSING, Unresolved, property_name, value_at

FSX = "AWS::FSx::FileSystem"
_DOCS = "https://docs.aws.amazon.com"
_CFN_LUSTRE = (
    f"{_DOCS}/AWSCloudFormation/latest/TemplateReference/"
    "aws-properties-fsx-filesystem-lustreconfiguration.html"
)
_API = f"{_DOCS}/fsx/latest/APIReference"
_UPDATE_LUSTRE = f"{_API}/API_UpdateFileSystemLustreConfiguration.html"
_LUSTRE = "/properties/LustreConfiguration"


class Effect(StrEnum):
    REPLACES = "replaces"
    FIXED = "fixed"
    GROWS = "grows"


# GROWS: (value before, value after, the properties after) -> what is wrong, or None.
Check = Callable[[Any, Any, dict[str, Any]], str | None]


@dataclass(frozen=True)
class PropertyRule:
    resource_type: str
    pointer: str
    effect: Effect
    source: str
    # The config setting that writes the property (None: gpucluster itself), and how to fix it.
    setting: str | None = None
    fix: str = ""
    # The value an absent property has (EfaEnabled is written only when true).
    default: Any = MISSING
    check: Check | None = None


@dataclass(frozen=True)
class Refusal:
    """A change the stack update would fail on."""

    logical_id: str
    prop: str
    setting: str | None
    problem: str
    fix: str

    def problem_line(self) -> str:
        """`FIELD: what is wrong; how to fix it`, as every bad input reads."""
        where = self.setting or f"({self.logical_id} {self.prop})"
        return f"{where}: {self.problem}; {self.fix}"


def _ints(*values: Any) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def _storage_growth(before: Any, after: Any, props: dict[str, Any]) -> str | None:
    if not _ints(before, after):
        return None
    if after < before:
        return f"FSx for Lustre storage only grows, it cannot shrink from {before} to {after} GiB"
    lustre = props.get("LustreConfiguration", {})
    deployment = lustre.get("DeploymentType", "SCRATCH_1")  # FSx's default
    throughput = lustre.get("PerUnitStorageThroughput")
    step = fsx_rules.growth_step(deployment, throughput, lustre.get("EfaEnabled") is True)
    if step is None:
        return f"{deployment} storage cannot be increased ({before} -> {after} GiB)"
    if after % step:
        return f"{before} -> {after} GiB: FSx grows this file system's storage in multiples of {step} GiB"
    return None


def _version(text: Any) -> tuple[int, ...] | None:
    parts = str(text).split(".")
    return tuple(map(int, parts)) if all(p.isdigit() for p in parts) else None


def _newer_version(before: Any, after: Any, props: dict[str, Any]) -> str | None:
    old, new = _version(before), _version(after)
    if old is None or new is None or new >= old:
        return None
    return f"Lustre {before} -> {after}: FSx upgrades a file system's Lustre version, never downgrades it"


def _not_lower(before: Any, after: Any, props: dict[str, Any]) -> str | None:
    if not _ints(before, after) or after >= before:
        return None
    return f"metadata IOPS {before} -> {after}: FSx only raises a file system's provisioned metadata IOPS"


_COPY = "create it beside this one and copy the data"

RDS = "AWS::RDS::DBInstance"


def _whole(value: Any) -> int | None:
    """An integer property CloudFormation also takes as text (AllocatedStorage: "20")."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return value if _ints(value) else None


def _database_storage_growth(before: Any, after: Any, props: dict[str, Any]) -> str | None:
    old, new = _whole(before), _whole(after)
    if old is None or new is None or new >= old:
        return None
    return f"RDS storage only grows, it cannot shrink from {old} to {new} GiB"


def _fixed_at_creation(name: str, setting: str | None = None, default: Any = MISSING) -> PropertyRule:
    return PropertyRule(
        FSX,
        f"{_LUSTRE}/{name}",
        Effect.FIXED,
        _UPDATE_LUSTRE,
        setting,
        f"keep the deployed value; another value needs a new file system: {_COPY}",
        default,
    )


RULES: tuple[PropertyRule, ...] = (
    PropertyRule(
        FSX,
        f"{_LUSTRE}/DeploymentType",
        Effect.REPLACES,
        f"{_CFN_LUSTRE}#cfn-fsx-filesystem-lustreconfiguration-deploymenttype",
        "storage.fsx_lustre.deployment_type",
    ),
    PropertyRule(
        FSX,
        f"{_LUSTRE}/CopyTagsToBackups",
        Effect.REPLACES,
        f"{_CFN_LUSTRE}#cfn-fsx-filesystem-lustreconfiguration-copytagstobackups",
    ),
    # CreateFileSystemLustreConfiguration takes these; UpdateFileSystemLustreConfiguration
    # does not, while the Template Reference says "No interruption" for each.
    _fixed_at_creation("EfaEnabled", "storage.fsx_lustre.efa", default=False),
    _fixed_at_creation("DriveCacheType"),
    _fixed_at_creation("ImportPath"),
    _fixed_at_creation("ExportPath"),
    _fixed_at_creation("ImportedFileChunkSize"),
    # Managing storage capacity: "You can only increase the amount of storage capacity for a
    # file system; you cannot decrease storage capacity", in the increments fsx_rules cites.
    PropertyRule(
        FSX,
        "/properties/StorageCapacity",
        Effect.GROWS,
        f"{_API}/API_UpdateFileSystem.html; {_DOCS}/fsx/latest/LustreGuide/managing-storage-capacity.html",
        "storage.fsx_lustre.storage_gib",
        "keep the deployed size or grow it in the steps FSx offers; a smaller one is a new file "
        f"system: {_COPY}",
        check=_storage_growth,
    ),
    # UpdateFileSystem FileSystemTypeVersion: "must be newer than the file system's current
    # Lustre version". gpucluster writes the version (constructs_lib/fsx_lustre.py).
    PropertyRule(
        FSX,
        "/properties/FileSystemTypeVersion",
        Effect.GROWS,
        f"{_API}/API_UpdateFileSystem.html",
        None,
        "deploy with the gpucluster release that created the file system",
        check=_newer_version,
    ),
    # UpdateFileSystemLustreMetadataConfiguration Iops: "must be greater than or equal to the
    # current number of Metadata IOPS provisioned for the file system".
    # ModifyDBInstance AllocatedStorage: "the value supplied must be at least 10% greater than
    # the current value" (a smaller increase is rounded up, a decrease is refused).
    PropertyRule(
        RDS,
        "/properties/AllocatedStorage",
        Effect.GROWS,
        f"{_DOCS}/AmazonRDS/latest/APIReference/API_ModifyDBInstance.html",
        "accounting.database.storage_gib",
        "keep the deployed size or grow it; a smaller database is a new one: create it beside this one, "
        "dump and restore the data",
        check=_database_storage_growth,
    ),
    PropertyRule(
        FSX,
        f"{_LUSTRE}/MetadataConfiguration/Iops",
        Effect.GROWS,
        f"{_API}/API_UpdateFileSystemLustreMetadataConfiguration.html",
        "storage.fsx_lustre.metadata_iops",
        "keep metadata_iops at the deployed value or raise it",
        check=_not_lower,
    ),
)


def rules_for(resource_type: str) -> tuple[PropertyRule, ...]:
    return tuple(rule for rule in RULES if rule.resource_type == resource_type)


def documented_replacements(resource_type: str) -> dict[str, str]:
    """The REPLACES pointers of `resource_type`, each with the page that documents it."""
    return {r.pointer: r.source for r in rules_for(resource_type) if r.effect == Effect.REPLACES}


def _shown(value: Any) -> str:
    return "(absent)" if value is MISSING else json.dumps(value)


def refusals(
    logical_id: str, resource_type: str, before: dict[str, Any], after: dict[str, Any]
) -> list[Refusal]:
    """The changes from `before` to `after` (properties of a resource updated in place, not
    replaced) that the service refuses, so the stack update would fail."""
    found: list[Refusal] = []
    for rule in rules_for(resource_type):
        if rule.effect == Effect.REPLACES:
            continue
        old, new = value_at(before, rule.pointer), value_at(after, rule.pointer)
        old = rule.default if old is MISSING else old
        new = rule.default if new is MISSING else new
        # An intrinsic's value is known only at deploy time.
        if old == new or isinstance(old, Unresolved) or isinstance(new, Unresolved):
            continue
        name = property_name(rule.pointer)
        if rule.effect == Effect.FIXED:
            service = resource_type.split("::")[1]
            problem: str | None = (
                f"{name} {_shown(old)} -> {_shown(new)}: {service} sets it only when it creates the "
                "resource and CloudFormation updates it in place, so the deploy would fail and roll back"
            )
        else:
            problem = rule.check(old, new, after) if rule.check else None
        if problem:
            found.append(Refusal(logical_id, name, rule.setting, problem, rule.fix))
    return found
