"""The cluster configuration: one YAML file, validated once, in this package.

Every other module receives a `ClusterConfig`; none re-checks what is checked here.
Field names are the public contract (README, Configuration reference). One module per
section of the file (network, image, nodes, capacity, storage, software, validation, health,
accounting and its accounting_database), the root in `cluster`, the one YAML reader in
`loader` and `yaml_input`; the AWS rules the sections enforce live beside them (`fsx_rules`,
`capacity_block_rules`, `placement_rules`, `mount_points`).
"""

from gpucluster.config.accounting import AccountConfig, AccountingConfig, QosConfig
from gpucluster.config.accounting_database import DatabaseConfig
from gpucluster.config.capacity import (
    CAPACITY_BLOCK_END_UTC,
    CAPACITY_BLOCK_SIZES,
    Capacity,
    CapacityBlockCapacity,
    OdcrCapacity,
    OnDemandCapacity,
)
from gpucluster.config.cluster import ClusterConfig
from gpucluster.config.fields import StrictModel
from gpucluster.config.health import HealthConfig
from gpucluster.config.image import DLAMI_UBUNTU_2404, ImageConfig
from gpucluster.config.network import NetworkConfig
from gpucluster.config.nodes import (
    DEFAULT_MAX_TIME_MINUTES,
    DEFAULT_TIME_MINUTES,
    RESERVED_GROUP_NAMES,
    ComputeGroupConfig,
    HeadNodeConfig,
    LoginNodesConfig,
)
from gpucluster.config.rest_api import RestApiConfig
from gpucluster.config.software import SoftwareConfig
from gpucluster.config.storage import FsxLustreConfig, StorageConfig
from gpucluster.config.validation import ValidationConfig

__all__ = [
    "CAPACITY_BLOCK_END_UTC",
    "CAPACITY_BLOCK_SIZES",
    "DEFAULT_MAX_TIME_MINUTES",
    "DEFAULT_TIME_MINUTES",
    "DLAMI_UBUNTU_2404",
    "RESERVED_GROUP_NAMES",
    "AccountConfig",
    "AccountingConfig",
    "Capacity",
    "CapacityBlockCapacity",
    "ClusterConfig",
    "ComputeGroupConfig",
    "DatabaseConfig",
    "FsxLustreConfig",
    "HealthConfig",
    "HeadNodeConfig",
    "ImageConfig",
    "LoginNodesConfig",
    "NetworkConfig",
    "OdcrCapacity",
    "OnDemandCapacity",
    "QosConfig",
    "RestApiConfig",
    "SoftwareConfig",
    "StorageConfig",
    "StrictModel",
    "ValidationConfig",
]
