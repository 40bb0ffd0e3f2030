"""The pattern-checked strings (gpucluster/config/fields.py `matching`): each refuses a bad
value with the one line that names the field, says what is wrong and what to write."""

from __future__ import annotations

import copy

import pytest
import yaml

from gpucluster.bad_input import BadInput
from gpucluster.config.loader import parse_config
from tests.conftest import REPO

DEFAULT = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())


def problems_with(path: str, value: object) -> list[str]:
    data = copy.deepcopy(DEFAULT)
    *parents, last = path.split(".")
    node = data
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    node[last] = value
    try:
        parse_config(yaml.safe_dump(data), "c.yaml")
    except BadInput as exc:
        return exc.problems
    return []


CASES = [
    ("region", "mars-1", "region: 'mars-1' is not an AWS region name; use one like us-east-2"),
    ("account", "12345", "account: an AWS account id is 12 digits; quote it in YAML"),
    (
        "network.vpc_id",
        "vpc-xyz",
        "network.vpc_id: 'vpc-xyz' is not a VPC id; expected vpc- and 8 or 17 hex digits",
    ),
    (
        "network.subnet_id",
        "subnet-1",
        "network.subnet_id: 'subnet-1' is not a subnet id; expected subnet- and 8 or 17 hex digits",
    ),
    (
        "image.ami_id",
        "ami-zz",
        "image.ami_id: 'ami-zz' is not an AMI id; expected ami- and 8 or 17 hex digits",
    ),
    (
        "image.kernel",
        "latest",
        "image.kernel: 'latest' is not a kernel release; use what `uname -r` prints, e.g. 6.8.0-1021-aws",
    ),
    (
        "head_node.instance_type",
        "big",
        "head_node.instance_type: 'big' is not an EC2 instance type; use a name like m7i.2xlarge",
    ),
    (
        "compute_groups.0.name",
        "GPU",
        "compute_groups.0.name: 'GPU' is not a usable group name; use 1-20 lower-case letters and "
        "digits starting with a letter (it becomes a Slurm partition, node-name prefix and feature)",
    ),
    (
        "compute_groups.0.capacity.reservation_id",
        "res-123",
        "compute_groups.0.capacity.reservation_id: 'res-123' is not a capacity reservation id; it looks "
        "like cr-0123456789abcdef0 (cr- and 17 hex digits, as shown by `aws ec2 "
        "describe-capacity-reservations`)",
    ),
    (
        "software.enroot_sha256",
        "abc",
        "software.enroot_sha256: must be 64 lower-case hex digits (the output of sha256sum)",
    ),
]


@pytest.mark.parametrize(("path", "value", "line"), CASES, ids=[case[0] for case in CASES])
def test_a_bad_value_is_one_line_naming_the_field(path, value, line):
    assert problems_with(path, value) == [line]


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("account", "012345678901"),
        ("network.vpc_id", "vpc-0abc1234def567890"),
        ("image.ami_id", "ami-0123456789abcdef0"),
        ("image.kernel", "6.8.0-1021-aws"),
        ("compute_groups.0.name", "gpu2"),
    ],
)
def test_a_good_value_passes(path, value):
    # vpc_id alone asks for its subnet; that rule is not the id's shape.
    assert not any(p.startswith(f"{path}:") for p in problems_with(path, value))
