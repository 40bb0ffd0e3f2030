"""SharedHome: an encrypted, backed-up EFS file system that outlives its stack, mounted in
the node subnet behind the storage security group."""

from __future__ import annotations

import pytest

from gpucluster.constructs_lib.shared_home import SharedHome, SharedHomeProps
from tests.constructs_lib.small_stack import STORAGE_SG, SUBNET_ID, Built, build, ref


@pytest.fixture(scope="module")
def home() -> Built[SharedHome]:
    props = SharedHomeProps(subnet_id=SUBNET_ID, security_group_id=STORAGE_SG)
    return build(lambda stack: SharedHome(stack, "Home", props))


def test_the_file_system_is_retained_on_delete_and_on_replacement(home):
    (file_system,) = home.resources("AWS::EFS::FileSystem").values()
    assert file_system["DeletionPolicy"] == file_system["UpdateReplacePolicy"] == "Retain"


def test_the_file_system_is_encrypted_backed_up_and_protected_from_replication(home):
    file_system = home.only("AWS::EFS::FileSystem")
    assert file_system["Encrypted"] is True
    assert file_system["BackupPolicy"] == {"Status": "ENABLED"}
    assert file_system["FileSystemProtection"] == {"ReplicationOverwriteProtection": "ENABLED"}


def test_one_mount_target_in_the_node_subnet_behind_the_storage_group(home):
    target = home.only("AWS::EFS::MountTarget")
    assert target == {
        "FileSystemId": ref(home, home.construct.file_system),
        "SubnetId": SUBNET_ID,
        "SecurityGroups": [STORAGE_SG],
    }
