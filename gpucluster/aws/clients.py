"""Every boto3 client of the workstation verbs is made here: region, retries, timeouts.

Standard retry mode retries throttling and transient errors with backoff, as AWS
advises (boto3 guide, "Retries": https://boto3.amazonaws.com/v1/documentation/api/latest/guide/retries.html);
legacy mode, boto3's default, retries fewer error codes. Tests replace `make_client`
to hand out stubbed or moto-backed clients.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from botocore.config import Config

# The services the workstation verbs call; each verb names its calls in gpucluster.aws.errors.
Service = Literal["ec2", "ssm", "sts", "cloudformation", "service-quotas", "rds", "cloudwatch"]

AWS_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 5},
    connect_timeout=10,
    read_timeout=60,
)


def _boto3_client(service: Service, region: str) -> Any:
    import boto3

    # Typed as Any: boto3-stubs types clients only with the per-service stub packages,
    # which the project does not install; responses are read into typed records at once.
    return boto3.client(service, region_name=region, config=AWS_CONFIG)


# Replaced in tests (monkeypatch) by a factory of stubbed or moto-backed clients.
make_client: Callable[[Service, str], Any] = _boto3_client


class Clients:
    """One client per service and region for the life of a verb."""

    def __init__(self) -> None:
        self._made: dict[tuple[Service, str], Any] = {}

    def get(self, service: Service, region: str) -> Any:
        """The client; a login or config problem found while making it (a profile that does
        not exist, a config file that cannot be parsed, a failing credential_process) is
        the AwsError of every call it would make."""
        from botocore.exceptions import BotoCoreError

        from gpucluster.aws.errors import explain

        key = (service, region)
        if key not in self._made:
            try:
                # make_client is read at call time, so a test's replacement applies.
                self._made[key] = make_client(service, region)
            except BotoCoreError as exc:
                raise explain(service, region, exc) from None
            except ValueError as exc:
                if not str(exc).startswith("Invalid endpoint"):
                    raise
                raise explain(service, region, exc) from None
        return self._made[key]
