"""`rest_api:`: off by default; on, slurmrestd's port and who may reach it. Each mistake is one
line naming its field (exit 2 through `gpucluster validate`); it needs no `accounting:`."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import yaml

from gpucluster.bad_input import BadInput
from gpucluster.config.loader import parse_config
from gpucluster.resolved import resolve
from tests.conftest import REPO

DEFAULT = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())


def with_rest_api(rest_api: object) -> dict:
    data = copy.deepcopy(DEFAULT)
    data["rest_api"] = rest_api
    return data


def problems(data: dict) -> list[str]:
    try:
        parse_config(yaml.safe_dump(data), "c.yaml")
    except BadInput as exc:
        return exc.problems
    return []


def test_off_by_default():
    assert resolve(parse_config(yaml.safe_dump(DEFAULT), "c.yaml")).rest_api is None


def test_on_without_accounting_with_slurms_port_and_nobody_admitted():
    resolved = resolve(parse_config(yaml.safe_dump(with_rest_api({})), "c.yaml"))
    assert resolved.accounting is None
    rest_api = resolved.rest_api
    assert rest_api is not None
    assert (rest_api.port, rest_api.allow_cidrs, rest_api.allow_security_groups) == (6820, (), ())
    assert rest_api.jwt_secret_parameter == "/gpucluster/demo/storage/rest_api_jwt_secret_arn"
    assert rest_api.reader_role_name == "gpucluster-demo-us-east-2-head"


def test_the_lists_are_sorted_so_a_reordering_changes_no_rule():
    data = with_rest_api(
        {
            "allow_cidrs": ["192.168.0.0/24", "10.20.0.0/16"],
            "allow_security_groups": ["sg-0fff1111aaaa2222b", "sg-0123456789abcdef0"],
        }
    )
    rest_api = resolve(parse_config(yaml.safe_dump(data), "c.yaml")).rest_api
    assert rest_api is not None
    assert rest_api.allow_cidrs == ("10.20.0.0/16", "192.168.0.0/24")
    assert rest_api.allow_security_groups == ("sg-0123456789abcdef0", "sg-0fff1111aaaa2222b")


@pytest.mark.parametrize(
    ("rest_api", "expected"),
    [
        ({"allow_cidrs": ["0.0.0.0/0"]}, "rest_api.allow_cidrs: 0.0.0.0/0 would admit every address"),
        ({"allow_cidrs": ["10.0.0.1/8"]}, "rest_api.allow_cidrs.0: '10.0.0.1/8' is not an IPv4 CIDR block"),
        (
            {"allow_cidrs": ["10.0.0.0/8", "office"]},
            "rest_api.allow_cidrs.1: 'office' is not an IPv4 CIDR block",
        ),
        (
            {"allow_cidrs": [10]},
            "rest_api.allow_cidrs.0: must be a CIDR block like 10.20.0.0/16, not a number",
        ),
        (
            {"allow_cidrs": ["10.1.0.0/16", "10.1.0.0/16"]},
            "rest_api.allow_cidrs: lists 10.1.0.0/16 more than once",
        ),
        (
            {"allow_security_groups": ["sg-12"]},
            "rest_api.allow_security_groups.0: 'sg-12' is not a security group id",
        ),
        ({"port": 80}, "rest_api.port: must be at least 1024"),
        ({"port": 6819}, "rest_api.port: 6819 is slurmdbd's port on the head"),
        ({"ports": 6820}, "rest_api.ports"),
    ],
)
def test_mistakes_name_their_field(rest_api, expected):
    found = problems(with_rest_api(rest_api))
    assert len(found) == 1 and found[0].startswith(expected), found


def test_the_cidr_message_gives_the_network_address():
    (found,) = problems(with_rest_api({"allow_cidrs": ["10.20.0.9/16"]}))
    assert "its network address is 10.20.0.0/16" in found


def test_validate_exits_2_naming_the_field(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(with_rest_api({"allow_cidrs": ["0.0.0.0/0"]})))
    result = subprocess.run(
        [sys.executable, "-m", "gpucluster", "validate", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "rest_api.allow_cidrs" in result.stdout + result.stderr and "Traceback" not in result.stderr
