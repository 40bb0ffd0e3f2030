"""What both agents share at start-up: settings, logging and AWS clients.

Settings come from, in order of precedence: command-line options, the file named by
--env-file, then the process environment (systemd's EnvironmentFile= puts the head
node's settings file, cluster_names.AGENT_ENV_FILE, there). Keys:

    GPUCLUSTER_CLUSTER=<cluster name>
    GPUCLUSTER_REGION=<region>
    GPUCLUSTER_MAINTENANCE_GRACE_MINUTES=60     (optional, capacity controller only)
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from gpucluster.agents.cluster_names import AGENT_ENV_FILE as ENV_FILE
from gpucluster.agents.cluster_names import CLUSTER_NAME, CLUSTER_SETTING, REGION_SETTING

_CLUSTER = re.compile(rf"^{CLUSTER_NAME}$")
_REGION = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-\d$")

# Standard retries ride out throttling; the timeouts keep one run well inside its minute.
AWS_MAX_ATTEMPTS = 5
AWS_CONNECT_TIMEOUT = 5
AWS_READ_TIMEOUT = 20


class SettingError(ValueError):
    pass


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines as systemd's EnvironmentFile= reads them: blank lines and # or ;
    comments skipped, one pair of surrounding quotes removed."""
    try:
        text = path.read_text()
    except OSError as err:
        raise SettingError(f"cannot read env file {path}: {err.strerror}") from err
    values = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise SettingError(f"{path} line {number}: expected KEY=VALUE, got {raw!r}")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def add_common_arguments(parser: argparse.ArgumentParser, cluster: bool = True) -> None:
    if cluster:
        parser.add_argument("--cluster", help=f"cluster name (default: ${CLUSTER_SETTING})")
    parser.add_argument("--region", help=f"AWS region (default: ${REGION_SETTING})")
    parser.add_argument(
        "--env-file",
        type=Path,
        help=f"read GPUCLUSTER_* settings from this file (systemd passes {ENV_FILE} as environment)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug detail")


class Settings:
    """Looks a setting up by its environment key, with the precedence described above."""

    def __init__(self, args: argparse.Namespace, environ: Mapping[str, str]) -> None:
        self._file = read_env_file(args.env_file) if args.env_file else {}
        self._environ = environ
        self._args = args

    def get(self, key: str, cli_value: str | None = None) -> str | None:
        if cli_value is not None:
            return cli_value
        return self._file.get(key, self._environ.get(key))

    def require(self, key: str, option: str, cli_value: str | None) -> str:
        value = self.get(key, cli_value)
        if not value:
            raise SettingError(f"{key} is not set: pass {option} or set it in {ENV_FILE}")
        return value

    def cluster(self) -> str:
        value = self.require(CLUSTER_SETTING, "--cluster", getattr(self._args, "cluster", None))
        if not _CLUSTER.match(value):
            raise SettingError(f"{CLUSTER_SETTING} '{value}' is not a gpucluster cluster name")
        return value

    def region(self) -> str:
        value = self.require(REGION_SETTING, "--region", self._args.region)
        if not _REGION.match(value):
            raise SettingError(f"{REGION_SETTING} '{value}' is not an AWS region name like us-east-2")
        return value


def configure_logging(verbose: bool) -> None:
    # journald stamps each line with time and unit; the level is all that is added here.
    logging.basicConfig(
        stream=sys.stdout,
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(levelname)s %(message)s",
    )
    # botocore's debug output is noise even in verbose runs.
    logging.getLogger("botocore").setLevel(logging.WARNING)
    logging.getLogger("urllib3").setLevel(logging.WARNING)


# The services the agents call; boto3-stubs types boto3.client by literal service name.
Service = Literal["ec2", "autoscaling", "ssm", "cloudwatch", "eks", "sts", "secretsmanager"]


def client(service: Service, region: str) -> Any:
    # Imported here: the synth imports agent modules for their names and data (accounts'
    # records, node_repair's settings), and the AWS SDK would cost every synth a tenth of a second.
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"max_attempts": AWS_MAX_ATTEMPTS, "mode": "standard"},
        connect_timeout=AWS_CONNECT_TIMEOUT,
        read_timeout=AWS_READ_TIMEOUT,
    )
    return boto3.client(service, region_name=region, config=config)
