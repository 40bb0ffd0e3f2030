"""`accounting:`: Slurm accounting (slurmdbd) on a database the cluster creates or on an existing
slurmdbd, and the accounts, users and QOS the head applies with sacctmgr.

Names follow what slurmdbd keeps: it stores account and QOS names in lower case and sacctmgr
splits its lists at commas and reads `+`/`-` in front of a name as an operator, so a name is
lower-case letters, digits, `_` and `-`, starting with a letter. Users are Linux login names.
A user may belong to several accounts (Slurm allows it); the first account that lists a user is
that user's default account. A user listed twice in one account is a mistake.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from gpucluster.config.accounting_database import DatabaseConfig
from gpucluster.config.fields import StrictModel, fail, fail_at, matching, slurm_minutes

SLURM_NAME = r"[a-z][a-z0-9_-]{0,63}"
SlurmName = Annotated[
    str,
    matching(
        rf"^{SLURM_NAME}$",
        "slurm_name",
        "'{value}' is not a usable Slurm account or QOS name; use 1-64 lower-case letters, digits, "
        "_ and -, starting with a letter (slurmdbd keeps names in lower case; sacctmgr reads "
        "commas, quotes, + and - specially)",
    ),
]
# useradd's default rule (NAME_REGEX) without the trailing `$` of machine accounts.
UserName = Annotated[
    str,
    matching(
        r"^[a-z_][a-z0-9_-]{0,31}$",
        "user_name",
        "'{value}' is not a Linux login name; use 1-32 lower-case letters, digits, _ and -, "
        "starting with a letter or _",
    ),
]
# Slurm's own: every cluster has the account `root`, and slurmdbd creates the QOS `normal`,
# which accounts may name without defining it.
ROOT_ACCOUNT = "root"
SLURM_DEFAULT_QOS = "normal"
SLURMDBD_PORT = 6819
# A secret's full ARN: Secrets Manager appends "-" and six characters to the name, and IAM
# matches the full ARN, so a partial one would grant nothing.
_SECRET_ARN = re.compile(
    r"^arn:(?P<partition>aws|aws-cn|aws-us-gov):secretsmanager:(?P<region>[a-z]{2}(?:-[a-z]+)+-\d):"
    r"\d{12}:secret:[A-Za-z0-9/_+=.@-]{1,512}-[A-Za-z0-9]{6}$"
)
_HOST = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)


class QosConfig(StrictModel):
    """One QOS: the limits a team lead sets on a shared block. Unset limits are Slurm's (none)."""

    name: SlurmName
    priority: int = Field(
        default=0, ge=0, le=2**32 - 2, description="QOS priority, weighted by PriorityWeightQOS."
    )
    max_wall: int | None = Field(
        default=None,
        description='MaxWall of each job: minutes, or a quoted Slurm time ("HH:MM:SS", "D-HH:MM").',
    )
    max_gpus_per_user: int | None = Field(
        default=None, ge=1, description="GPUs one user's running jobs may hold together (MaxTRESPerUser)."
    )
    max_gpus_per_job: int | None = Field(
        default=None, ge=1, description="GPUs one job may ask for (MaxTRESPerJob)."
    )
    max_jobs_per_user: int | None = Field(
        default=None, ge=1, description="Jobs one user may have running at once (MaxJobsPerUser)."
    )

    _slurm_time = field_validator("max_wall", mode="before")(slurm_minutes)

    @model_validator(mode="after")
    def _limits_agree(self) -> QosConfig:
        per_job, per_user = self.max_gpus_per_job, self.max_gpus_per_user
        if per_job is not None and per_user is not None and per_job > per_user:
            raise fail_at(
                "max_gpus_per_job",
                f"{per_job} GPUs per job is more than the {per_user} a user may hold "
                "(max_gpus_per_user), so such a job could never start; lower it or raise max_gpus_per_user",
            )
        return self


class AccountConfig(StrictModel):
    name: SlurmName
    users: list[UserName] = Field(default_factory=list, description="Login names of the account's users.")
    fairshare: int = Field(
        default=1,
        ge=1,
        le=1_000_000,
        description="The account's share of the cluster, relative to the others.",
    )
    qos: list[SlurmName] = Field(
        default_factory=list,
        description=f"QOS the account's jobs may use: names from accounting.qos, or {SLURM_DEFAULT_QOS}. "
        f"Empty: Slurm's {SLURM_DEFAULT_QOS}.",
    )
    default_qos: SlurmName | None = Field(
        default=None, description="QOS of a job submitted without --qos: one of qos; null: the first of qos."
    )

    @field_validator("name")
    @classmethod
    def _not_root(cls, value: str) -> str:
        if value == ROOT_ACCOUNT:
            raise fail(
                "name", "'root' is Slurm's own top account, the parent of every other; pick another name"
            )
        return value

    @model_validator(mode="after")
    def _own_lists(self) -> AccountConfig:
        for field, listed in (("users", self.users), ("qos", self.qos)):
            repeated = _repeated(listed)
            if repeated:
                raise fail_at(field, f"lists {', '.join(repeated)} more than once; list each once")
        if self.default_qos is not None and self.default_qos not in self.qos:
            raise fail_at(
                "default_qos",
                f"'{self.default_qos}' is not in this account's qos list ({', '.join(self.qos) or 'empty'}); "
                "add it there or pick one of them",
            )
        return self

    @property
    def resolved_default_qos(self) -> str:
        if self.default_qos is not None:
            return self.default_qos
        return self.qos[0] if self.qos else SLURM_DEFAULT_QOS


class AccountingConfig(StrictModel):
    """Slurm accounting. Exactly one of `database` (the cluster creates the database and runs
    slurmdbd on its head) and `external` (an existing slurmdbd several clusters share)."""

    database: DatabaseConfig | None = Field(
        default=None, description="Create an RDS for MariaDB database and run slurmdbd on the head node."
    )
    external: str | None = Field(
        default=None,
        description=f"host:port of an existing slurmdbd (port default {SLURMDBD_PORT}); it must trust this "
        "cluster's munge key.",
    )
    munge_key_secret: str | None = Field(
        default=None,
        description="ARN of an existing Secrets Manager secret holding the munge key, read by every "
        "node instead of the key the Storage stack generates: the same secret on every cluster that "
        "shares one slurmdbd (slurmdbd accepts only credentials signed with its own key). Full ARN, "
        "in the cluster's region; the secret's own policy must let this cluster's roles read it.",
    )
    accounts: list[AccountConfig] = Field(default_factory=list)
    qos: list[QosConfig] = Field(default_factory=list)

    @field_validator("munge_key_secret")
    @classmethod
    def _secret_arn(cls, value: str | None) -> str | None:
        if value is not None and not _SECRET_ARN.match(value):
            raise fail(
                "munge_key_secret",
                f"'{value}' is not the full ARN of a Secrets Manager secret; copy it from `aws "
                "secretsmanager describe-secret --secret-id NAME --query ARN` (it ends in - and six "
                "characters), e.g. "
                "arn:aws:secretsmanager:us-east-2:123456789012:secret:shared/munge-key-AbCdEf",
            )
        return value

    @field_validator("external")
    @classmethod
    def _host_port(cls, value: str | None) -> str | None:
        if value is not None:
            _split_host_port(value)
        return value

    @model_validator(mode="after")
    def _one_source_and_known_names(self) -> AccountingConfig:
        if (self.database is None) == (self.external is None):
            raise fail_at(
                "database",
                "set exactly one of database (the cluster creates one, e.g. database: {}) and external "
                "(host:port of an existing slurmdbd)",
            )
        if self.external is not None and self.munge_key_secret is None:
            # slurmdbd accepts only credentials signed with its own munge key, and without a
            # shared secret every node would get the key this cluster's Storage stack generates.
            raise fail_at(
                "munge_key_secret",
                f"external slurmdbd {self.external} would refuse this cluster's generated munge key; "
                "set munge_key_secret to the ARN of the secret every cluster sharing that slurmdbd "
                "reads (README, Accounting: Several clusters, one history)",
            )
        for field, names in (
            ("accounts", [account.name for account in self.accounts]),
            ("qos", [qos.name for qos in self.qos]),
        ):
            repeated = _repeated(names)
            if repeated:
                raise fail_at(field, f"names must be unique; repeated: {', '.join(repeated)}")
        known = {qos.name for qos in self.qos} | {SLURM_DEFAULT_QOS}
        for index, account in enumerate(self.accounts):
            unknown = [name for name in account.qos if name not in known]
            if unknown:
                raise fail_at(
                    f"accounts.{index}.qos",
                    f"unknown QOS {', '.join(unknown)}; define it under accounting.qos "
                    f"(defined: {', '.join(sorted(known))})",
                )
        return self

    @property
    def external_host(self) -> str | None:
        return None if self.external is None else _split_host_port(self.external)[0]

    @property
    def external_port(self) -> int:
        return SLURMDBD_PORT if self.external is None else _split_host_port(self.external)[1]

    def default_accounts(self) -> dict[str, str]:
        """Each user's default account: the first account that lists the user."""
        chosen: dict[str, str] = {}
        for account in self.accounts:
            for user in account.users:
                chosen.setdefault(user, account.name)
        return chosen


def munge_secret_region_problem(arn: str, region: str) -> str | None:
    """What is wrong with a munge key secret outside the cluster's region or partition: nodes
    ask Secrets Manager in their own region, and IAM grants no role across partitions."""
    found = _SECRET_ARN.match(arn)
    if found is None:
        return None  # the field's own validator names the shape
    partition, secret_region = found.group("partition"), found.group("region")
    want = _partition(region)
    if secret_region != region or partition != want:
        return (
            f"the secret is in {partition}/{secret_region}, the cluster in {want}/{region}; nodes read "
            f"the munge key in their own region: replicate the secret to {region} (aws secretsmanager "
            "replicate-secret-to-regions) and give the replica's ARN"
        )
    return None


def _partition(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def _repeated(names: list[str]) -> list[str]:
    return sorted({name for name in names if names.count(name) > 1})


def _split_host_port(value: str) -> tuple[str, int]:
    host, sep, port_text = value.rpartition(":")
    if not sep:
        host, port_text = value, str(SLURMDBD_PORT)
    port = int(port_text) if port_text.isdigit() else 0
    if not _HOST.match(host) or not 1 <= port <= 65535:
        raise fail(
            "external",
            f"'{value}' is not host:port of a slurmdbd; write a DNS name or IPv4 address and a port 1-65535, "
            f"e.g. slurmdbd.example.internal:{SLURMDBD_PORT}",
        )
    return host, port
