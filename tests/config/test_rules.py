"""Rules of AWS services the model enforces before deploy (FSx sizing, Capacity Blocks, mounts)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

import pytest
import yaml

from gpucluster.bad_input import BadInput
from gpucluster.config import fsx_rules
from gpucluster.config.loader import parse_config
from tests.conftest import REPO

DEFAULT = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())


def problems_for(change) -> list[str]:
    data = copy.deepcopy(DEFAULT)
    change(data)
    try:
        parse_config(yaml.safe_dump(data), "c.yaml")
    except BadInput as exc:
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


@pytest.mark.parametrize(
    ("size", "ok"), [(1200, True), (2400, True), (3600, True), (7200, True), (6000, False)]
)
def test_scratch_1_grows_in_multiples_of_3600(size, ok):
    """CreateFileSystem: SCRATCH_1 takes "1200 GiB, 2400 GiB, and increments of 3600 GiB",
    read like the 2400 GiB increments of the other types: multiples of the step."""
    problems = problems_for(fsx(deployment_type="SCRATCH_1", throughput_per_tib=None, storage_gib=size))
    if ok:
        assert problems == []
    else:
        assert problems == [
            "storage.fsx_lustre.storage_gib: 6000 GiB is not a valid SCRATCH_1 size; "
            "use 1200, 2400, or a multiple of 3600"
        ]


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


def block(start: str, end: str):
    def change(d):
        d["compute_groups"][0]["capacity"].update(start=start, end=end)

    return change


def block_problems(start: str, end: str, now: str = "2026-12-01T00:00:00Z") -> list[str]:
    data = copy.deepcopy(DEFAULT)
    block(start, end)(data)
    try:
        parse_config(yaml.safe_dump(data), "c.yaml", now=datetime.fromisoformat(now))
    except BadInput as exc:
        return exc.problems
    return []


@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("2026-12-07T11:30:00Z", "2026-12-08T11:30:00Z"),  # 1 day
        ("2026-12-07T11:30:00Z", "2026-12-21T11:30:00Z"),  # 14 days
        ("2026-12-07T11:30:00Z", "2026-12-28T11:30:00Z"),  # 21 days
        ("2026-12-07T11:30:00Z", "2027-06-07T11:30:00Z"),  # 182 days
        ("2026-12-07T14:00:00Z", "2026-12-14T11:30:00Z"),  # 7 days, offering starts late
    ],
)
def test_capacity_block_lengths_ec2_sells(start, end):
    assert block_problems(start, end) == []


@pytest.mark.parametrize(
    ("start", "end", "says"),
    [
        ("2026-12-07T10:30:00Z", "2026-12-07T11:30:00Z", "lasts 1 hours"),
        ("2026-12-07T11:30:00Z", "2026-12-24T11:30:00Z", "lasts 408 hours (17.0 days)"),
        ("2026-12-07T11:30:00Z", "2027-06-14T11:30:00Z", "(189.0 days)"),
    ],
)
def test_capacity_block_lengths_refused(start, end, says):
    problems = block_problems(start, end)
    assert len(problems) == 1 and problems[0].startswith("compute_groups.0.capacity.end: ")
    assert says in problems[0] and "1-14 days, or 21-182 days in 7-day steps" in problems[0]


def test_expired_capacity_block_refused():
    problems = block_problems("2026-11-20T11:30:00Z", "2026-11-27T11:30:00Z")
    assert problems == [
        "compute_groups.0.capacity.end: the block ended 3 days ago (end 2026-11-27T11:30Z); EC2 "
        "terminates its instances from 30 minutes before the end, so no node could run. Use a "
        "current block's reservation_id, start and end, or extend this one (PurchaseCapacityBlockExtension)"
    ]


def test_block_ending_within_30_minutes_refused_after_that_accepted():
    start, end = "2026-11-24T11:30:00Z", "2026-12-01T11:30:00Z"
    assert "ends in 20 minutes" in block_problems(start, end, now="2026-12-01T11:10:00Z")[0]
    assert block_problems(start, end, now="2026-12-01T10:59:00Z") == []


def test_clock_comes_from_gpucluster_now(monkeypatch):
    from gpucluster.config.capacity_block_rules import current_time

    monkeypatch.setenv("GPUCLUSTER_NOW", "2027-07-02T03:04:05Z")
    assert current_time() == datetime(2027, 7, 2, 3, 4, 5, tzinfo=UTC)
    data = copy.deepcopy(DEFAULT)
    with pytest.raises(BadInput, match="ended"):
        parse_config(yaml.safe_dump(data), "c.yaml")


BLOCK_EXAMPLE = yaml.safe_load((REPO / "examples" / "p5en-capacity-block.yaml").read_text())


def shared_block_problems(change) -> list[str]:
    """Problems of the Capacity Block example with a second group on the first one's block,
    after `change(second_group)`."""
    data = copy.deepcopy(BLOCK_EXAMPLE)
    second = {**copy.deepcopy(data["compute_groups"][0]), "name": "more", "count": 2}
    change(second)
    data["compute_groups"].append(second)
    try:
        parse_config(yaml.safe_dump(data), "c.yaml")
    except BadInput as exc:
        return exc.problems
    return []


def test_two_groups_may_split_one_block_described_alike():
    assert shared_block_problems(lambda group: None) == []


@pytest.mark.parametrize(
    ("change", "differs"),
    [
        (
            lambda g: g.update(instance_type="p5.48xlarge"),
            "instance type (p5.48xlarge here, p5en.48xlarge there)",
        ),
        (
            lambda g: g["capacity"].update(end="2027-06-10T11:30:00Z"),
            "end (2027-06-10T11:30Z here, 2027-06-17T11:30Z there)",
        ),
        (
            lambda g: g.update(capacity={"type": "odcr", "reservation_id": g["capacity"]["reservation_id"]}),
            "capacity type (odcr here, capacity-block there), start (none here, 2027-06-03T11:30Z there)",
        ),
    ],
    ids=["instance-type", "window", "capacity-type"],
)
def test_a_reservation_two_groups_describe_otherwise_is_refused(change, differs):
    [problem] = shared_block_problems(change)
    assert problem.startswith(
        "compute_groups.1.capacity.reservation_id: cr-0f1e2d3c4b5a69788 is group h200's"
    )
    assert f"differ in {differs}" in problem
    assert problem.endswith("or give this group its own reservation")
