"""`gpucluster validate`: exit 2 with a line naming the field, for each kind of mistake."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpucluster.cli import app
from gpucluster.config import ClusterConfig
from tests.conftest import EXAMPLES, REPO

DEFAULT = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
runner = CliRunner()


def edited(change) -> dict:
    data = copy.deepcopy(DEFAULT)
    change(data)
    return data


def group(data: dict) -> dict:
    return data["compute_groups"][0]


def setitem(path: str, value):
    def change(data):
        *parents, last = path.split(".")
        node = data
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value

    return change


INVALID = {
    "az-not-in-region": (setitem("availability_zone", "us-west-2a"), "availability_zone"),
    "bad-cluster-name": (setitem("name", "My_Cluster"), "name"),
    "bad-region": (setitem("region", "mars-1"), "region"),
    "no-replacements-per-hour": (
        setitem("health", {"max_replacements_per_hour": 0}),
        "health.max_replacements_per_hour",
    ),
    "negative-drain-grace": (setitem("health", {"drain_grace_minutes": -5}), "health.drain_grace_minutes"),
    "unknown-health-key": (setitem("health", {"replace_nodes": False}), "health.replace_nodes"),
    "unknown-instance-type": (
        lambda d: group(d).update(instance_type="p9.96xlarge"),
        "compute_groups.0.instance_type",
    ),
    "efa-fsx-with-non-efa-clients": (
        # 19200 GiB: the EFA step at 250 MB/s/TiB, so only the client rule fails.
        lambda d: (
            d["storage"]["fsx_lustre"].update(efa=True, storage_gib=19200) or group(d).update(efa=False)
        ),
        "storage.fsx_lustre.efa",
    ),
    "bad-reservation-id": (
        lambda d: group(d)["capacity"].update(reservation_id="res-123"),
        "compute_groups.0.capacity.reservation_id",
    ),
    "block-start-after-end": (
        lambda d: group(d)["capacity"].update(start="2027-06-20T11:30:00Z"),
        "compute_groups.0.capacity.start",
    ),
    "block-end-not-1130": (
        lambda d: group(d)["capacity"].update(end="2027-06-14T12:00:00Z"),
        "compute_groups.0.capacity.end",
    ),
    "block-without-timezone": (
        lambda d: group(d)["capacity"].update(start="2027-06-07 11:30:00"),
        "compute_groups.0.capacity.start",
    ),
    "block-count-over-64": (lambda d: group(d).update(count=65), "compute_groups.0.count"),
    "block-on-g6e": (
        lambda d: group(d).update(instance_type="g6e.48xlarge"),
        "compute_groups.0.capacity",
    ),
    "odcr-without-reservation": (
        lambda d: group(d).update(capacity={"type": "odcr"}),
        "compute_groups.0.capacity.reservation_id",
    ),
    "unknown-capacity-type": (
        lambda d: group(d).update(capacity={"type": "spot"}),
        "compute_groups.0.capacity",
    ),
    "duplicate-group-names": (
        lambda d: d["compute_groups"].append(copy.deepcopy(group(d))),
        "compute_groups",
    ),
    "group-name-not-slurm-safe": (lambda d: group(d).update(name="GPU-1"), "compute_groups.0.name"),
    "group-named-all": (lambda d: group(d).update(name="all"), "compute_groups.0.name"),
    "group-named-default": (lambda d: group(d).update(name="default"), "compute_groups.0.name"),
    "placement-group-not-a-choice": (
        lambda d: group(d).update(placement_group="maybe"),
        "compute_groups.0.placement_group",
    ),
    "zero-count": (lambda d: group(d).update(count=0), "compute_groups.0.count"),
    "fsx-size": (setitem("storage.fsx_lustre.storage_gib", 3000), "storage.fsx_lustre.storage_gib"),
    "fsx-throughput-for-type": (
        setitem("storage.fsx_lustre.throughput_per_tib", 200),
        "storage.fsx_lustre.throughput_per_tib",
    ),
    "fsx-scratch-with-throughput": (
        setitem("storage.fsx_lustre.deployment_type", "SCRATCH_2"),
        "storage.fsx_lustre.throughput_per_tib",
    ),
    "fsx-efa-on-persistent-1": (
        lambda d: d["storage"]["fsx_lustre"].update(
            deployment_type="PERSISTENT_1", throughput_per_tib=200, efa=True
        ),
        "storage.fsx_lustre.efa",
    ),
    "fsx-bad-compression": (
        setitem("storage.fsx_lustre.compression", "ZSTD"),
        "storage.fsx_lustre.compression",
    ),
    "public-cidr": (setitem("network.cidr", "8.8.0.0/16"), "network.cidr"),
    "loopback-cidr": (setitem("network.cidr", "127.0.0.0/16"), "network.cidr"),
    "cidr-too-small": (setitem("network.cidr", "10.0.0.0/26"), "network.cidr"),
    "vpc-without-subnet": (setitem("network.vpc_id", "vpc-0abc1234def567890"), "network.subnet_id"),
    "ubuntu-2204-image": (
        setitem(
            "image.ssm_parameter",
            "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id",
        ),
        "image.ssm_parameter",
    ),
    "bad-kernel": (setitem("image.kernel", "latest"), "image.kernel"),
    "typo-key": (lambda d: d.update(compute_group=[]), "compute_group"),
    "wrong-type": (setitem("login_nodes.count", "two"), "login_nodes.count"),
    "missing-region": (lambda d: d.pop("region"), "region"),
    "tag-key-with-slash": (lambda d: d.update(tags={"team/name": "x"}), "tags"),
    "reserved-tag-prefix": (lambda d: d.update(tags={"gpucluster:cluster": "x"}), "tags"),
    "new-enroot-old-checksum": (
        lambda d: d.update(software={"enroot_version": "4.3.0"}),
        "software.enroot_sha256",
    ),
    "old-slurm": (lambda d: d.update(software={"slurm": "21.08.5"}), "software.slurm"),
    "other-slurm": (lambda d: d.update(software={"slurm": "23.11.4"}), "software.slurm"),
    # The default example's block lasts 7 days.
    "max-time-past-the-block": (
        lambda d: group(d).update(max_time="7-01:00:00"),
        "compute_groups.0.max_time",
    ),
    "default-time-over-max-time": (
        lambda d: group(d).update(default_time="2-00:00:00", max_time="1-00:00:00"),
        "compute_groups.0.default_time",
    ),
    "time-minutes-seconds": (lambda d: group(d).update(default_time="1:30"), "compute_groups.0.default_time"),
    "time-not-slurm": (lambda d: group(d).update(max_time="2 days"), "compute_groups.0.max_time"),
    # More accounting mistakes: tests/config/test_accounting.py.
    "accounting-unknown-qos": (
        setitem("accounting", {"database": {}, "accounts": [{"name": "team-a", "qos": ["fast"]}]}),
        "accounting.accounts.0.qos",
    ),
    "accounting-database-and-external": (
        setitem("accounting", {"database": {}, "external": "dbd.internal:6819"}),
        "accounting.database",
    ),
}


def run_validate(tmp_path: Path, data: dict | str) -> tuple[int, str]:
    path = tmp_path / "cluster.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_config_exits_2_naming_the_field(tmp_path, case):
    change, field = INVALID[case]
    code, output = run_validate(tmp_path, edited(change))
    assert code == 2, output
    error_lines = [line for line in output.splitlines() if line.startswith("error ")]
    assert error_lines, output
    assert any(f": {field}:" in line for line in error_lines), f"{field} not named in:\n{output}"
    assert len(error_lines) == 1, "one mistake, one line"
    assert "Traceback" not in output


def test_at_least_fifteen_distinct_invalid_configs():
    assert len(INVALID) >= 15


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("name: [unclosed\n", "(yaml) line 2"),
        ("- just\n- a list\n", "(top level)"),
        ("", "(top level)"),
        ("name: demo\n\tregion: x\n", "(yaml)"),
    ],
)
def test_broken_yaml_is_one_clear_line(tmp_path, text, fragment):
    code, output = run_validate(tmp_path, text)
    assert code == 2
    assert fragment in output
    assert "Traceback" not in output


def test_missing_file_and_directory(tmp_path):
    for target in (tmp_path / "nope.yaml", tmp_path):
        result = runner.invoke(app, ["validate", str(target)])
        assert result.exit_code == 2
        assert "(file)" in result.output


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_examples_validate(example):
    result = runner.invoke(app, ["validate", str(example)])
    assert result.exit_code == 0, result.output


def test_placement_group_forced_on_capacity_block_is_a_warning(tmp_path):
    data = edited(lambda d: group(d).update(placement_group=True))
    code, output = run_validate(tmp_path, data)
    assert code == 0
    assert "compute_groups.0.placement_group: forced on a Capacity Block group" in output
    cfg = ClusterConfig.model_validate(data)
    assert cfg.compute_groups[0].uses_placement_group is True


def test_real_command_line_exit_code(tmp_path):
    """The installed console script, not only the in-process runner."""
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(edited(setitem("availability_zone", "eu-west-1a"))))
    gpucluster = Path(sys.executable).parent / "gpucluster"
    proc = subprocess.run([str(gpucluster), "validate", str(path)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "availability_zone" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_another_slurm_release_names_the_supported_one(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(edited(lambda d: d.update(software={"slurm": "24.11.5"}))))
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert "software.slurm" in result.output
    assert "only Slurm 25.11.7" in result.output and "set software.slurm to 25.11.7" in result.output


def test_schema_command_prints_the_model_schema():
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    schema = yaml.safe_load(result.output)
    assert set(schema["required"]) == {"name", "region", "availability_zone", "compute_groups"}
    assert "compute_groups" in schema["properties"]


def test_quoted_clock_time_is_hours_minutes_seconds():
    """README tells users to quote times: YAML 1.1 reads an unquoted 1:00:00 as the base-60
    integer 3600, which would be 3600 minutes. Quoted, it is one hour."""
    from gpucluster.config.loader import parse_config

    text = (REPO / "examples" / "default.yaml").read_text()
    assert "    instance_type: p5.48xlarge\n" in text
    text = text.replace(
        "    instance_type: p5.48xlarge\n",
        '    instance_type: p5.48xlarge\n    default_time: "1:00:00"\n    max_time: "2-00:00"\n',
    )
    cfg = parse_config(text)
    assert cfg.compute_groups[0].default_time == 60
    assert cfg.compute_groups[0].max_time_minutes == 2 * 1440


def test_time_limit_defaults():
    cfg = ClusterConfig.model_validate(DEFAULT)
    block = cfg.compute_groups[0]
    assert block.is_capacity_block and block.default_time == 60
    assert block.max_time_minutes == 7 * 1440  # the example's 7-day block
    on_demand = edited(
        lambda d: group(d).update(capacity={"type": "on-demand"}, instance_type="g6e.48xlarge")
    )
    assert ClusterConfig.model_validate(on_demand).compute_groups[0].max_time_minutes == 7 * 1440
    short = edited(lambda d: group(d)["capacity"].update(start="2027-06-12T11:30:00Z"))
    assert ClusterConfig.model_validate(short).compute_groups[0].max_time_minutes == 2 * 1440
