"""A cluster's names, taken once from gpucluster.names (where each format is written)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gpucluster import names
from gpucluster.config import ClusterConfig


@dataclass(frozen=True)
class ClusterNames:
    """Every name the stacks and the nodes share for one cluster."""

    # role (network, storage, cluster) -> stack name
    stacks: Mapping[str, str]
    parameter_prefix: str
    private_zone: str
    controller_host: str
    bundle_parameter: str
    log_agent_config_parameter: str
    head_image_parameter: str
    storage_parameter_path: str
    # storage fact (names.STORAGE_FACTS) -> the SSM parameter the Storage stack writes
    storage_parameters: Mapping[str, str]
    munge_secret_name_prefix: str
    munge_secret_name_pattern: str
    role_name_prefix: str
    # Session Manager's way in for the people of users: (README: Users and access)
    session_document: str
    people_policy: str
    # where imported training images live, and the training image's squashfs ("" when none)
    image_dir: str
    training_squashfs: str


def cluster_names(cfg: ClusterConfig) -> ClusterNames:
    return ClusterNames(
        stacks=MappingProxyType(names.stack_names(cfg)),
        parameter_prefix=names.parameter_prefix(cfg),
        private_zone=names.private_zone(cfg),
        controller_host=names.controller_host(cfg),
        bundle_parameter=names.bundle_parameter(cfg),
        log_agent_config_parameter=names.log_agent_config_parameter(cfg),
        head_image_parameter=names.head_image_parameter(cfg),
        storage_parameter_path=names.storage_parameter_path(cfg),
        storage_parameters=MappingProxyType(
            {fact: names.storage_parameter(cfg, fact) for fact in names.STORAGE_FACTS}
        ),
        munge_secret_name_prefix=names.munge_secret_name_prefix(cfg),
        munge_secret_name_pattern=names.munge_secret_name_pattern(cfg),
        role_name_prefix=names.role_name_prefix(cfg),
        session_document=names.session_document_name(cfg),
        people_policy=names.people_policy_name(cfg),
        image_dir=names.image_dir(cfg),
        training_squashfs=names.training_squashfs(cfg),
    )
