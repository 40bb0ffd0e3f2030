"""botocore Stubber clients for the calls moto lacks (Capacity Blocks), handed to the verbs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from gpucluster.aws import clients


class StubbedAws:
    """One stubbed client per (service, region); every call a test did not queue fails."""

    def __init__(self) -> None:
        self.stubs: dict[tuple[str, str], Stubber] = {}
        self.made: list[tuple[str, str]] = []

    def client(self, service: str, region: str) -> Any:
        self.made.append((service, region))
        return self.stub(service, region).client

    def stub(self, service: str, region: str) -> Stubber:
        key = (service, region)
        if key not in self.stubs:
            made = boto3.client(
                service,  # type: ignore[call-overload]
                region_name=region,
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )
            self.stubs[key] = Stubber(made)
            self.stubs[key].activate()
        return self.stubs[key]

    def ec2(self, region: str = "us-east-2") -> Stubber:
        return self.stub("ec2", region)

    def check_all_used(self) -> None:
        for stub in self.stubs.values():
            stub.assert_no_pending_responses()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StubbedAws]:
    stubbed = StubbedAws()
    monkeypatch.setattr(clients, "make_client", stubbed.client)
    monkeypatch.setenv("GPUCLUSTER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    yield stubbed
    stubbed.check_all_used()


@pytest.fixture
def moto_aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto's account (123456789012) behind every boto3 client, with test credentials."""
    from moto import mock_aws

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield
