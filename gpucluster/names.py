"""Names shared by the stacks, the renderer and the node scripts.

Those the head node's agents use too are defined in gpucluster.agents.cluster_names
(the agents import nothing else of gpucluster) and used from there or through here.

Nodes find deploy-time facts (file system ids, the munge key's secret ARN) in SSM
Parameter Store under one prefix, so the stateless Cluster stack never imports
values from the stateful Storage stack.
"""

from __future__ import annotations

import hashlib
import re

from gpucluster.agents import cluster_names
from gpucluster.agents.cluster_names import AGENT_ENV_FILE as AGENT_ENV_FILE
from gpucluster.agents.cluster_names import CLUSTER_SETTING as CLUSTER_SETTING
from gpucluster.agents.cluster_names import COMPUTE_NODE_NAME_FORMAT as COMPUTE_NODE_NAME_FORMAT
from gpucluster.agents.cluster_names import REGION_SETTING as REGION_SETTING
from gpucluster.agents.cluster_names import compute_node_name as compute_node_name
from gpucluster.agents.cluster_names import group_feature as group_feature
from gpucluster.agents.cluster_names import group_partition as group_partition
from gpucluster.config import ClusterConfig

# Tag keys gpucluster sets on what it creates. Users may not set keys with this prefix.
TAG_PREFIX = "gpucluster:"
# Every resource: the cluster's name. The nodes' IAM policies match on it.
CLUSTER_TAG = f"{TAG_PREFIX}cluster"
# Every node: head, login or compute.
ROLE_TAG = f"{TAG_PREFIX}role"
# Compute nodes: their compute group.
GROUP_TAG = f"{TAG_PREFIX}group"
# A node that fails before joining tags itself with the reason.
BOOTSTRAP_FAILURE_TAG = f"{TAG_PREFIX}bootstrap-failure"

# Compute nodes complete this Auto Scaling launch hook once they joined Slurm.
LAUNCH_LIFECYCLE_HOOK = "gpucluster-launch"

# Construct id of the head node in the Cluster stack. Its logical IDs start with it, and
# `gpucluster diff` finds the head's instance by it; renaming it would replace the head.
HEAD_NODE_ID = "HeadNode"


# A cluster's stacks are named `<cluster name>-<role>`; `gpucluster diff` reads a
# baseline's cluster from them.
STACK_ROLES = ("network", "storage", "cluster", "monitoring")


def stack_names(cfg: ClusterConfig) -> dict[str, str]:
    return {role: f"{cfg.name}-{role}" for role in STACK_ROLES}


def parameter_prefix(cfg: ClusterConfig) -> str:
    return cluster_names.parameter_prefix(cfg.name)


def private_zone(cfg: ClusterConfig) -> str:
    return f"{cfg.name}.gpucluster.internal"


def controller_host(cfg: ClusterConfig) -> str:
    return f"slurmctld.{private_zone(cfg)}"


# The munge secret's name ends with this many hex characters taken from the Storage
# stack's id: the secret is retained on delete, so a fixed name would make the next
# deploy of the stack fail with "already exists".
MUNGE_SECRET_SUFFIX_LENGTH = 12


def munge_secret_name_prefix(cfg: ClusterConfig) -> str:
    """The munge secret's name without its per-stack suffix; IAM policies match on it."""
    return f"gpucluster/{cfg.name}/munge-key-"


def munge_secret_name_pattern(cfg: ClusterConfig) -> str:
    """IAM resource-name pattern of the secret: the stack suffix, then Secrets Manager's own."""
    return _suffixed_secret_pattern(munge_secret_name_prefix(cfg))


def _suffixed_secret_pattern(prefix: str) -> str:
    return prefix + "?" * MUNGE_SECRET_SUFFIX_LENGTH + "-??????"


# Slurm accounting's database (accounting.database), retained in the Storage stack like the
# munge key, so its names take the same per-stack suffix.
def accounting_db_secret_name_prefix(cfg: ClusterConfig) -> str:
    """The database password's secret without its per-stack suffix; the head's role reads it."""
    return f"gpucluster/{cfg.name}/accounting-db-"


def accounting_db_secret_name_pattern(cfg: ClusterConfig) -> str:
    return _suffixed_secret_pattern(accounting_db_secret_name_prefix(cfg))


def accounting_db_identifier_prefix(cfg: ClusterConfig) -> str:
    """The RDS instance's identifier without its per-stack suffix (63 characters at most, no
    two hyphens in a row: the config refuses a cluster name that would break either)."""
    return f"gpucluster-{cfg.name}-accounting-"


# The REST API's JWT signing key (rest_api), retained in the Storage stack like the munge key,
# so its name takes the same per-stack suffix.
def rest_api_jwt_secret_name_prefix(cfg: ClusterConfig) -> str:
    """The JWT key's secret without its per-stack suffix; the head's role alone reads it."""
    return f"gpucluster/{cfg.name}/rest-api-jwt-key-"


def rest_api_jwt_secret_name_pattern(cfg: ClusterConfig) -> str:
    return _suffixed_secret_pattern(rest_api_jwt_secret_name_prefix(cfg))


# The system user slurmrestd runs as on the head: its own, neither root nor SlurmUser, which
# slurmrestd refuses (slurmrestd(8)), and no member of their groups.
SLURMRESTD_USER = "slurmrestd"


# The MariaDB user slurmdbd connects as (StorageUser; the instance's master user) and its
# database (StorageLoc: slurmdbd's default name).
ACCOUNTING_DB_USER = "slurm"
ACCOUNTING_DB_NAME = "slurm_acct_db"


def log_agent_config_parameter(cfg: ClusterConfig) -> str:
    """The CloudWatch agent's configuration, which every node fetches at boot."""
    return f"{parameter_prefix(cfg)}/logs/agent-config"


def compute_group_parameter(cfg: ClusterConfig, group: str) -> str:
    """JSON facts about one compute group (Auto Scaling group name, capacity) for the head node."""
    return cluster_names.compute_group_parameter(cfg.name, group)


def bundle_parameter(cfg: ClusterConfig) -> str:
    """SSM parameter holding `<sha256> <s3 url>` of the current bootstrap bundle.

    The head node reads it at boot and polls it afterwards, so its user data never names
    a bundle, which moves with every cluster setting."""
    return f"{parameter_prefix(cfg)}/bootstrap/bundle"


# The bootstrap bundle's file name when the CDK stages it as a file asset.
BUNDLE_FILE = "bundle.tar.gz"


def bundle_object_key(asset_hash: str) -> str:
    """The bundle's S3 key: the CDK names a file asset by its asset hash (64 hex digits,
    not the file's sha256) and keeps the file's last extension, so `<asset hash>.gz`."""
    return asset_hash + "." + BUNDLE_FILE.rsplit(".", 1)[1]


def slurm_source_object_key(source_sha256: str) -> str:
    """The Slurm source's S3 key in the same bucket as the bundle: sha256 of the source's
    sha256 (the CDK's rule for a custom asset hash) and the last extension, as the CDK's
    synthesizer names a file asset (constructs_lib/bootstrap_bundle.py checks
    it at synth)."""
    return hashlib.sha256(source_sha256.encode()).hexdigest() + ".gz"


def cdk_assets_bucket(account: str, region: str) -> str:
    """The file-asset bucket of an account and region bootstrapped with the CDK's default
    qualifier, where the bundle is uploaded."""
    return f"cdk-hnb659fds-assets-{account}-{region}"


# The parameter whose value every node reads its munge key's secret from (gpucluster diff
# guards a change of it: nodes booted before and after would hold different keys).
MUNGE_SECRET_FACT = "munge_secret_arn"
# accounting_db_*: the database's address, port and password secret, only with accounting.database;
# rest_api_jwt_secret_arn: the JWT key's secret, only with rest_api.
STORAGE_FACTS = (
    "efs_id",
    "fsx_dns_name",
    "fsx_mount_name",
    MUNGE_SECRET_FACT,
    # read by the Monitoring stack's dashboard and FSx alarm, not by the nodes
    "fsx_id",
    "accounting_db_host",
    "accounting_db_port",
    "accounting_db_secret_arn",
    "rest_api_jwt_secret_arn",
)


def storage_parameter_path(cfg: ClusterConfig) -> str:
    """The Storage stack's parameters are under this path."""
    return f"{parameter_prefix(cfg)}/storage"


def storage_parameter(cfg: ClusterConfig, fact: str) -> str:
    """SSM parameter the Storage stack writes and nodes read at boot."""
    if fact not in STORAGE_FACTS:
        raise ValueError(f"unknown storage fact {fact!r}; expected one of {STORAGE_FACTS}")
    return f"{storage_parameter_path(cfg)}/{fact}"


def head_image_parameter(cfg: ClusterConfig) -> str:
    """JSON {"ami_id", "kernel"} the head node writes at boot: the kernel its AMI really boots,
    which `gpucluster ami pin --kernel-from-cluster` copies into image.kernel. The Cluster
    stack creates it (holding HEAD_IMAGE_NOT_RECORDED), so it is deleted with the cluster.
    Not ".../head/image": clusters deployed before the stack owned it have a parameter of
    that name, made by their head, and CloudFormation cannot create one that exists."""
    return f"{parameter_prefix(cfg)}/head/booted-image"


# The Cluster stack's value of head_image_parameter until the head overwrites it.
HEAD_IMAGE_NOT_RECORDED = "not recorded yet: the head node writes it at boot"


def role_name_prefix(cfg: ClusterConfig) -> str:
    """IAM role names of the cluster's nodes start with this; the munge secret trusts it."""
    return f"gpucluster-{cfg.name}-{cfg.region}-"


# Session Manager's shared account: the agent starts plain shells as it. Every node makes it
# without sudo (lib/users.sh), and the cluster's session document falls back on it.
SSM_USER = "ssm-user"
# The principal tag Session Manager reads the account of a Run As shell from (AWS's key).
RUN_AS_TAG = "SSMSessionRunAs"
# AWS's Session document that forwards ssh's port (`ssh -o ProxyCommand=...`).
SSH_SESSION_DOCUMENT = "AWS-StartSSHSession"


def session_document_name(cfg: ClusterConfig) -> str:
    """The cluster's Session Manager document: a shell as the caller's own account (Run As).
    Documents are regional, and a name may not start with aws, amazon or amzn."""
    return f"gpucluster-{cfg.name}-sessions"


def people_policy_name(cfg: ClusterConfig) -> str:
    """The managed policy that lets the cluster's people in; IAM names are account-wide."""
    return f"gpucluster-{cfg.name}-{cfg.region}-people"


# The Cluster stack's outputs that `gpucluster users access` reads back.
SESSION_DOCUMENT_OUTPUT = "SessionDocumentName"
PEOPLE_POLICY_OUTPUT = "PeoplePolicyArn"


# Imported training images live here under the FSx mount point when software.image_dir is null.
IMAGE_SUBDIR = "containers"
SQUASHFS_SUFFIX = ".sqsh"
# What the name keeps of an image reference: the part after the registry's '#', every other
# character (/ : @) turned into '+', as enroot import names a file without -o.
_SQUASHFS_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def squashfs_name(image: str) -> str:
    """[USER@]REGISTRY#REPO/NAME:TAG -> REPO+NAME+TAG.sqsh: one file per image and tag.

    The import job renders this name; it computes the same name in shell (its function
    squashfs_name) only for an image passed on its command line, and
    tests/jobs/test_import_image_job.py checks the two agree."""
    reference = image.split("#", 1)[1] if "#" in image else image
    return _SQUASHFS_UNSAFE.sub("+", reference) + SQUASHFS_SUFFIX


def image_dir(cfg: ClusterConfig) -> str:
    """Where imported images live: software.image_dir, else under the FSx mount point, else
    nowhere (the import job then asks for IMAGE_DIR)."""
    fsx = cfg.storage.fsx_lustre
    if cfg.software.image_dir:
        return cfg.software.image_dir
    return f"{fsx.mount_point}/{IMAGE_SUBDIR}" if fsx is not None else ""


def training_squashfs(cfg: ClusterConfig) -> str:
    """The squashfs the import job writes for software.training_image, which the validation
    and torchrun jobs run in by default; empty without a training image."""
    image = cfg.software.training_image
    directory = image_dir(cfg)
    if not image or not directory:
        return ""
    return f"{directory}/{squashfs_name(image)}"
