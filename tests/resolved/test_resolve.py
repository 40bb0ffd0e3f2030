"""resolve(cfg): each group's catalog entry, interfaces and Slurm names, the cluster's names
and Slurm release, made once and frozen."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest
import yaml

from gpucluster.agents.cluster_names import COMPUTE_NODE_NAME
from gpucluster.config import ClusterConfig
from gpucluster.config.loader import load_config
from gpucluster.resolved import ResolvedCluster, resolve
from gpucluster.slurm_release import PINNED_SHA256, PINNED_SLURM
from tests.conftest import EXAMPLES, REPO

MIXED = REPO / "examples" / "mixed.yaml"
INSTANCE = "i-0123456789abcdef0"


@pytest.fixture(scope="module")
def mixed_config() -> ClusterConfig:
    return load_config(MIXED)


@pytest.fixture(scope="module")
def mixed(mixed_config: ClusterConfig) -> ResolvedCluster:
    return resolve(mixed_config)


def test_groups_keep_the_config_order_with_their_catalog_entries(mixed: ResolvedCluster) -> None:
    assert [group.name for group in mixed.groups] == ["train", "dev", "eval"]
    assert [group.instance.name for group in mixed.groups] == ["p5.48xlarge", "g6e.48xlarge", "g6e.12xlarge"]


def test_a_group_carries_its_size_capacity_disk_and_time_limits(mixed: ResolvedCluster) -> None:
    train, dev, eval_ = mixed.groups
    assert [group.count for group in mixed.groups] == [8, 2, 1]
    assert [group.capacity_type for group in mixed.groups] == ["capacity-block", "on-demand", "odcr"]
    assert {group.root_volume_gib for group in mixed.groups} == {512}
    # A Capacity Block gets no placement group of the cluster's; an ODCR keeps the one it was made in.
    assert [group.creates_placement_group for group in mixed.groups] == [False, True, False]
    assert [group.existing_placement_group for group in mixed.groups] == [None, None, "eval-odcr"]
    # The block's MaxTime is its length (14 days); the others default to 7 days.
    assert [group.max_time_minutes for group in mixed.groups] == [14 * 24 * 60, 7 * 24 * 60, 7 * 24 * 60]
    assert train.default_time_minutes == dev.default_time_minutes == eval_.default_time_minutes == 60


def test_the_cluster_carries_the_sections_its_renderers_read(
    mixed: ResolvedCluster, mixed_config: ClusterConfig
) -> None:
    assert (mixed.name, mixed.region, mixed.account, mixed.orchestrator) == (
        mixed_config.name,
        mixed_config.region,
        mixed_config.account,
        mixed_config.orchestrator,
    )
    assert mixed.fsx_lustre == mixed_config.storage.fsx_lustre
    assert (mixed.image, mixed.head_node, mixed.login_nodes) == (
        mixed_config.image,
        mixed_config.head_node,
        mixed_config.login_nodes,
    )
    assert (mixed.health, mixed.validation, mixed.monitoring) == (
        mixed_config.health,
        mixed_config.validation,
        mixed_config.monitoring,
    )
    software = mixed_config.software
    assert (mixed.software.enroot_version, mixed.software.pyxis_sha256, mixed.software.torch_version) == (
        software.enroot_version,
        software.pyxis_sha256,
        software.torch_version,
    )


def test_an_efa_group_gets_every_efa_interface_of_its_type(mixed: ResolvedCluster) -> None:
    train = mixed.group("train")
    assert train.efa_count == 32 == train.instance.max_efa_interfaces
    assert len(train.interfaces) == 33  # the ENA primary on card 0 and one EFA per card
    assert train.interfaces[0] == (0, 0, "interface")
    assert train.interfaces[1] == (0, 1, "efa-only")
    assert mixed.group("eval").efa_count == 1


def test_a_group_without_efa_has_the_primary_interface_only() -> None:
    text = MIXED.read_text().replace("    count: 2\n", "    count: 2\n    efa: false\n", 1)
    assert "efa: false" in text
    # EFA-enabled FSx would need EFA clients; mixed.yaml's FSx is not EFA.
    cfg = ClusterConfig.model_validate(yaml.safe_load(text))
    dev = resolve(cfg).group("dev")
    assert dev.interfaces == ((0, 0, "interface"),)
    assert dev.efa_count == 0


def test_slurm_names_of_a_group(mixed: ResolvedCluster) -> None:
    train = mixed.group("train")
    assert train.node_name_format == "train-{instance_id}"
    assert train.node_name_format.format(instance_id=INSTANCE) == train.node_name(INSTANCE)
    assert COMPUTE_NODE_NAME.fullmatch(train.node_name(INSTANCE))
    assert (train.partition, train.feature) == ("train", "train")
    assert train.parameter == "/gpucluster/mixed/compute/train"


def test_the_cluster_names(mixed: ResolvedCluster) -> None:
    named = mixed.names
    assert dict(named.stacks) == {
        "network": "mixed-network",
        "storage": "mixed-storage",
        "cluster": "mixed-cluster",
        "monitoring": "mixed-monitoring",
    }
    assert named.controller_host == "slurmctld.mixed.gpucluster.internal"
    assert named.bundle_parameter == "/gpucluster/mixed/bootstrap/bundle"
    assert named.storage_parameters["munge_secret_arn"] == "/gpucluster/mixed/storage/munge_secret_arn"
    assert named.munge_secret_name_pattern == "gpucluster/mixed/munge-key-????????????-??????"
    assert named.role_name_prefix == "gpucluster-mixed-us-east-2-"
    assert (named.image_dir, named.training_squashfs) == ("/fsx/containers", "")


def test_the_slurm_release_and_its_source(mixed: ResolvedCluster, mixed_config: ClusterConfig) -> None:
    slurm = mixed.slurm
    assert slurm.version == PINNED_SLURM == mixed_config.software.slurm
    assert slurm.source_sha256 == PINNED_SHA256
    assert slurm.source_tarball.name == f"slurm-{PINNED_SLURM}.tar.gz"
    assert slurm.source_object_key == hashlib.sha256(PINNED_SHA256.encode()).hexdigest() + ".gz"


def test_tags_add_the_cluster_name_to_the_users(mixed: ResolvedCluster) -> None:
    assert dict(mixed.tags) == {"team": "ml-infra", "gpucluster:cluster": "mixed"}


def test_it_is_frozen(mixed: ResolvedCluster) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        mixed.groups = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        mixed.group("train").efa_count = 0  # type: ignore[misc]
    with pytest.raises(TypeError):
        mixed.names.stacks["network"] = "other"  # type: ignore[index]
    with pytest.raises(TypeError):
        mixed.tags["team"] = "other"  # type: ignore[index]


def test_an_unknown_group_is_named_in_the_error(mixed: ResolvedCluster) -> None:
    with pytest.raises(KeyError, match="cluster mixed has no compute group 'gpu'"):
        mixed.group("gpu")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.stem)
def test_every_example_resolves(path: Path) -> None:
    cfg = load_config(path)
    resolved = resolve(cfg)
    assert [(group.name, group.count, group.instance.name) for group in resolved.groups] == [
        (group.name, group.count, group.instance_type) for group in cfg.compute_groups
    ]


def test_the_network_the_cluster_creates(mixed: ResolvedCluster) -> None:
    network = mixed.network
    assert (network.existing_vpc_id, network.existing_subnet_id) == (None, None)
    assert network.availability_zone == "us-east-2b"
    assert str(network.cidr) == "10.81.0.0/16"
    # a /22 for the NAT gateway first, then half the VPC for the nodes, each aligned to its size
    assert (str(network.public_subnet), str(network.node_subnet)) == ("10.81.0.0/22", "10.81.128.0/17")


def test_how_each_group_is_bought(mixed: ResolvedCluster) -> None:
    assert [group.reservation_id for group in mixed.groups] == [
        "cr-01234567890abcdef",  # the Capacity Block
        None,  # on demand
        "cr-0123456789abcdef0",  # the ODCR
    ]


def test_ecr_repositories_as_sorted_arns(mixed: ResolvedCluster, mixed_config: ClusterConfig) -> None:
    assert mixed.ecr_repository_arns is None  # unset: every repository of the account
    software = mixed_config.software.model_copy(
        update={
            "ecr_repositories": [
                "123456789012.dkr.ecr.us-east-2.amazonaws.com/train",
                "arn:aws:ecr:us-east-2:123456789012:repository/team/*",
                "arn:aws:ecr:us-east-2:123456789012:repository/train",
            ]
        }
    )
    listed = resolve(mixed_config.model_copy(update={"software": software}))
    assert listed.ecr_repository_arns == (
        "arn:aws:ecr:us-east-2:123456789012:repository/team/*",
        "arn:aws:ecr:us-east-2:123456789012:repository/train",
    )
    none = mixed_config.software.model_copy(update={"ecr_repositories": []})
    assert resolve(mixed_config.model_copy(update={"software": none})).ecr_repository_arns == ()
