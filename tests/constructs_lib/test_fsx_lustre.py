"""FsxLustre: the file system the config describes, retained on delete; PERSISTENT_2 gets
its throughput and metadata settings, scratch gets neither, and EFA only when asked."""

from __future__ import annotations

import pytest

from gpucluster.constructs_lib.fsx_lustre import FsxLustre, FsxLustreProps
from tests.constructs_lib.small_stack import STORAGE_SG, SUBNET_ID, Built, build


def _lustre(cfg) -> Built[FsxLustre]:
    fsx = cfg.storage.fsx_lustre
    props = FsxLustreProps(
        storage_gib=fsx.storage_gib,
        deployment_type=fsx.deployment_type,
        throughput_per_tib=fsx.throughput_per_tib,
        compression=fsx.compression,
        efa=fsx.efa,
        metadata_iops=fsx.metadata_iops,
        subnet_id=SUBNET_ID,
        security_group_id=STORAGE_SG,
    )
    return build(lambda stack: FsxLustre(stack, "Lustre", props), cfg)


@pytest.fixture(scope="module")
def persistent_efa(example_configs) -> Built[FsxLustre]:
    return _lustre(example_configs["p5en-capacity-block"])  # PERSISTENT_2, EFA, 6000 metadata IOPS


@pytest.fixture(scope="module")
def persistent(example_configs) -> Built[FsxLustre]:
    return _lustre(example_configs["default"])  # PERSISTENT_2, no EFA, automatic metadata


@pytest.fixture(scope="module")
def scratch(example_configs) -> Built[FsxLustre]:
    return _lustre(example_configs["mixed"])  # SCRATCH_2


@pytest.mark.parametrize("built", ["persistent_efa", "persistent", "scratch"])
def test_the_file_system_is_retained_and_placed_in_the_node_subnet(request, built):
    built = request.getfixturevalue(built)
    (file_system,) = built.resources("AWS::FSx::FileSystem").values()
    assert file_system["DeletionPolicy"] == file_system["UpdateReplacePolicy"] == "Retain"
    properties = file_system["Properties"]
    assert (properties["SubnetIds"], properties["SecurityGroupIds"]) == ([SUBNET_ID], [STORAGE_SG])


def test_efa_and_provisioned_metadata_follow_the_config(persistent_efa, example_configs):
    settings = example_configs["p5en-capacity-block"].storage.fsx_lustre
    properties = persistent_efa.only("AWS::FSx::FileSystem")
    assert properties["StorageCapacity"] == settings.storage_gib
    lustre = properties["LustreConfiguration"]
    assert lustre["DeploymentType"] == "PERSISTENT_2"
    assert lustre["PerUnitStorageThroughput"] == settings.throughput_per_tib
    assert lustre["EfaEnabled"] is True
    assert lustre["MetadataConfiguration"] == {"Mode": "USER_PROVISIONED", "Iops": 6000}


def test_without_efa_or_metadata_iops_neither_is_set(persistent):
    lustre = persistent.only("AWS::FSx::FileSystem")["LustreConfiguration"]
    assert "EfaEnabled" not in lustre
    assert lustre["MetadataConfiguration"] == {"Mode": "AUTOMATIC"}


def test_scratch_has_no_throughput_tier_and_no_metadata_configuration(scratch):
    lustre = scratch.only("AWS::FSx::FileSystem")["LustreConfiguration"]
    assert lustre["DeploymentType"] == "SCRATCH_2"
    assert not {"PerUnitStorageThroughput", "MetadataConfiguration", "EfaEnabled"} & set(lustre)
