"""Rules of AWS services the model enforces before deploy (FSx sizing, Capacity Blocks, mounts)."""

from __future__ import annotations

import copy

import pytest
import yaml

from gpucluster import fsx_rules
from gpucluster.loader import ConfigError, parse_config
from tests.conftest import REPO

DEFAULT = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())


def problems_for(change) -> list[str]:
    data = copy.deepcopy(DEFAULT)
    change(data)
    try:
        parse_config(yaml.safe_dump(data), "c.yaml")
    except ConfigError as exc:
        return exc.problems
    return []


def fsx(**values):
    return lambda d: d["storage"]["fsx_lustre"].update(values)


def test_metadata_iops_values_are_the_documented_ones():
    values = fsx_rules.metadata_iops_valid_values()
    assert values[:5] == (1500, 3000, 6000, 12000, 24000)
    assert values[-1] == 192000
    assert len(values) == 4 + 15  # 24000 ... 192000 in steps of 12000


@pytest.mark.parametrize("iops", [1500, 3000, 6000, 12000, 24000, 36000, 192000])
def test_metadata_iops_accepted(iops):
    assert problems_for(fsx(metadata_iops=iops)) == []


@pytest.mark.parametrize("iops", [18000, 30000, 4500, 0, 1000, 204000])
def test_metadata_iops_rejected_with_neighbours(iops):
    problems = problems_for(fsx(metadata_iops=iops))
    assert len(problems) == 1
    assert problems[0].startswith("storage.fsx_lustre.metadata_iops: ")
    assert "multiple of 12000 up to 192000" in problems[0]


def test_18000_names_its_valid_neighbours():
    assert "nearest: 12000 or 24000" in fsx_rules.metadata_iops_problem(18000)


@pytest.mark.parametrize(
    ("throughput", "good", "bad"),
    [(125, 38400, 19200), (250, 19200, 9600), (500, 9600, 4800), (1000, 4800, 2400)],
)
def test_efa_capacity_steps_follow_throughput(throughput, good, bad):
    def efa_fsx(size):
        def change(d):
            d["storage"]["fsx_lustre"].update(
                efa=True, storage_gib=size, throughput_per_tib=throughput, deployment_type="PERSISTENT_2"
            )
            for g in d["compute_groups"]:
                g["efa"] = True

        return change

    assert problems_for(efa_fsx(good)) == []
    assert problems_for(efa_fsx(good * 3)) == []
    problems = problems_for(efa_fsx(bad))
    assert len(problems) == 1 and problems[0].startswith("storage.fsx_lustre.storage_gib: ")
    assert f"multiple of {good} GiB" in problems[0]


def test_non_efa_fsx_keeps_2400_steps():
    assert problems_for(fsx(efa=False, storage_gib=2400, throughput_per_tib=125)) == []


def test_ssh_ingress_cidrs_is_refused_with_what_to_use_instead():
    problems = problems_for(lambda d: d.setdefault("network", {}).update(ssh_ingress_cidrs=["10.0.0.0/8"]))
    assert len(problems) == 1
    assert problems[0].startswith("network.ssh_ingress_cidrs: was removed")
    assert "Session Manager" in problems[0]


def odcr(placement):
    def change(d):
        g = d["compute_groups"][0]
        g.update(instance_type="p5.48xlarge")
        g["capacity"] = {"type": "odcr", "reservation_id": "cr-0123456789abcdef0"}
        if placement is not None:
            g["placement_group"] = placement

    return change


def odcr_group(placement):
    data = copy.deepcopy(DEFAULT)
    odcr(placement)(data)
    return parse_config(yaml.safe_dump(data), "c.yaml").compute_groups[0]


def test_odcr_default_is_no_placement_group():
    group = odcr_group(None)
    assert not group.creates_placement_group and group.existing_placement_group is None


def test_odcr_takes_the_reservation_placement_group_by_name():
    group = odcr_group("my-odcr-pg")
    assert group.existing_placement_group == "my-odcr-pg"
    assert not group.creates_placement_group


def test_odcr_refuses_a_new_placement_group():
    problems = problems_for(odcr(True))
    assert len(problems) == 1 and problems[0].startswith("compute_groups.0.placement_group: ")
    assert "never gets a new placement group" in problems[0]


def test_placement_group_name_only_for_odcr():
    problems = problems_for(lambda d: d["compute_groups"][0].update(placement_group="somegroup"))
    assert len(problems) == 1 and "only ODCR groups take" in problems[0]


@pytest.mark.parametrize("path", ["/fsx", "/mnt/fsx", "/opt/fsx", "/data/lustre", "/scratch"])
def test_mount_point_accepted(path):
    assert problems_for(fsx(mount_point=path)) == []


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/etc", "inside /etc"),
        ("/usr/local/fsx", "inside /usr"),
        ("/var", "inside /var"),
        ("/home/fsx", "inside /home"),
        ("/tmp", "inside /tmp"),
        ("/opt/dlami/nvme", "inside /opt/dlami"),
        ("/opt", "would hide /opt/amazon"),
        ("/", "not a usable mount point"),
        ("/fsx/", "not a usable mount point"),
        ("fsx", "not a usable mount point"),
        ("/fsx//x", "not a usable mount point"),
    ],
)
def test_mount_point_system_paths_refused(path, says):
    problems = problems_for(fsx(mount_point=path))
    assert len(problems) == 1 and problems[0].startswith("storage.fsx_lustre.mount_point: ")
    assert says in problems[0]
