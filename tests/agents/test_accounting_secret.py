"""The accounting password writer (gpucluster/agents/accounting_secret.py), a CloudFormation
custom resource's handler: Secrets Manager faked by botocore's Stubber (any call not queued
fails), the Kubernetes API by the local HTTPS stand-in (tests/agents/kube_fake.py), and
CloudFormation's response URL by a local HTTP server that records what it is sent."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from gpucluster.agent_package import agent_tree, handler_module
from gpucluster.agents import accounting_secret as writer
from gpucluster.agents import accounting_secret_settings as settings
from gpucluster.agents.kube_api import CA_SETTING, ENDPOINT_SETTING
from tests.agent_scripts import run_in_package
from tests.agents.cfn_response_fake import ResponseFake, response_url
from tests.agents.kube_fake import HOST, KubeFake, serving

CLUSTER = "p5eks"
REGION = "us-east-2"
ARN = (
    "arn:aws:secretsmanager:us-east-2:111122223333:secret:gpucluster/p5eks/accounting-db-0a1b2c3d4e5f-AbCdEf"
)
PASSWORD = "Zq8pW3xR7tLm2VbN9cKd4HsJ6fGy1aEu"
ENCODED = base64.b64encode(PASSWORD.encode()).decode()
SECRET = "slurm/accounting-db"
PROPERTIES = {
    settings.SECRET_ARN_PROPERTY: ARN,
    settings.SECRET_FIELD_PROPERTY: "password",
    settings.NAMESPACE_PROPERTY: "slurm",
    settings.NAME_PROPERTY: "accounting-db",
    settings.KEY_PROPERTY: "password",
}


def event(request_type: str, url: str, properties: dict[str, Any] | None = None, **more: Any) -> dict:
    return {
        "RequestType": request_type,
        "ResponseURL": url,
        "StackId": "arn:aws:cloudformation:us-east-2:111122223333:stack/p5eks-eks/guid",
        "RequestId": "req-1",
        "LogicalResourceId": "AccountingPasswordSecretFDC9C09D",
        "ResourceType": settings.RESOURCE_TYPE,
        "ResourceProperties": {"ServiceToken": "arn:aws:lambda:...", **(properties or PROPERTIES)},
        **more,
    }


def secret_value(secret_string: str = json.dumps({"username": "slurm", "password": PASSWORD})) -> dict:
    return {"ARN": ARN, "Name": "gpucluster/p5eks/accounting-db-0a1b2c3d4e5f", "SecretString": secret_string}


def run(
    monkeypatch, tmp_path, fake: KubeFake, the_event, stub_calls=lambda stub: None
) -> tuple[ResponseFake, list[str]]:
    """Invoke the handler as Lambda does; CloudFormation's response, and the Kubernetes requests
    (method and path) it made."""
    secretsmanager = boto3.client(
        "secretsmanager", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )
    sts = boto3.client("sts", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(secretsmanager)
    stub_calls(stub)
    monkeypatch.setattr(
        writer.runtime,
        "client",
        lambda service, region: {"secretsmanager": secretsmanager, "sts": sts}[service],
    )
    with serving(fake, tmp_path), response_url() as cfn, stub:
        for key, value in {
            "GPUCLUSTER_CLUSTER": CLUSTER,
            ENDPOINT_SETTING: fake.endpoint,
            CA_SETTING: fake.ca_data,
            "AWS_REGION": REGION,
        }.items():
            monkeypatch.setenv(key, value)
        writer.handler(the_event(cfn.url), None)
    stub.assert_no_pending_responses()
    return cfn, [f"{r.method} {r.path}" for r in fake.requests]


def reads_the_password(stub: Stubber) -> None:
    stub.add_response("get_secret_value", secret_value(), {"SecretId": ARN})


def assert_hidden(*texts: str) -> None:
    for text in texts:
        assert PASSWORD not in text and ENCODED not in text


def test_create_writes_the_secret_with_the_password_base64d_under_the_key(monkeypatch, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    fake = KubeFake([])
    cfn, calls = run(monkeypatch, tmp_path, fake, lambda url: event("Create", url), reads_the_password)
    assert calls == ["POST /api/v1/namespaces/slurm/secrets"]
    secret = fake.secrets[SECRET]
    assert secret["type"] == "Opaque"
    assert secret["metadata"]["name"] == "accounting-db" and secret["metadata"]["namespace"] == "slurm"
    assert secret["data"] == {"password": ENCODED}
    assert fake.requests[0].headers["authorization"].startswith("Bearer k8s-aws-v1.")
    headers, response = cfn.received[0]
    assert headers["content-type"] == ""  # the presigned URL signs none
    assert response == {
        "Status": "SUCCESS",
        "Reason": f"created Secret slurm/accounting-db (key password) from {ARN}",
        "PhysicalResourceId": SECRET,
        "StackId": "arn:aws:cloudformation:us-east-2:111122223333:stack/p5eks-eks/guid",
        "RequestId": "req-1",
        "LogicalResourceId": "AccountingPasswordSecretFDC9C09D",
        "NoEcho": True,
    }
    assert "Data" not in response
    assert_hidden(json.dumps(cfn.received), caplog.text)
    assert "created Secret slurm/accounting-db" in caplog.text


def test_create_replaces_a_secret_made_by_hand_instead_of_failing(monkeypatch, tmp_path):
    fake = KubeFake([])
    fake.secrets[SECRET] = {
        "metadata": {"name": "accounting-db"},
        "data": {"password": "b2xk", "stale": "eA=="},
    }
    cfn, calls = run(monkeypatch, tmp_path, fake, lambda url: event("Create", url), reads_the_password)
    assert calls == [
        "POST /api/v1/namespaces/slurm/secrets",
        "PUT /api/v1/namespaces/slurm/secrets/accounting-db",
    ]
    assert fake.secrets[SECRET]["data"] == {"password": ENCODED}  # replaced: nothing stale kept
    assert cfn.response["Status"] == "SUCCESS"
    assert cfn.response["Reason"].startswith("replaced Secret slurm/accounting-db")


def test_update_patches_the_key_and_keeps_the_physical_id(monkeypatch, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    fake = KubeFake([])
    fake.secrets[SECRET] = {
        "metadata": {"name": "accounting-db"},
        "data": {"password": "b2xk", "other": "eA=="},
    }
    cfn, calls = run(
        monkeypatch,
        tmp_path,
        fake,
        lambda url: event("Update", url, PhysicalResourceId=SECRET, OldResourceProperties=PROPERTIES),
        reads_the_password,
    )
    assert calls == ["PATCH /api/v1/namespaces/slurm/secrets/accounting-db"]
    assert fake.requests[0].headers["content-type"] == "application/merge-patch+json"
    assert fake.requests[0].body == {"data": {"password": ENCODED}}
    assert fake.secrets[SECRET]["data"] == {"password": ENCODED, "other": "eA=="}
    assert cfn.response["Status"] == "SUCCESS" and cfn.response["PhysicalResourceId"] == SECRET
    assert_hidden(json.dumps(cfn.received), caplog.text)


def test_update_creates_the_secret_when_someone_deleted_it(monkeypatch, tmp_path):
    fake = KubeFake([])
    cfn, calls = run(
        monkeypatch,
        tmp_path,
        fake,
        lambda url: event("Update", url, PhysicalResourceId=SECRET),
        reads_the_password,
    )
    assert calls == [
        "PATCH /api/v1/namespaces/slurm/secrets/accounting-db",
        "POST /api/v1/namespaces/slurm/secrets",
    ]
    assert fake.secrets[SECRET]["data"] == {"password": ENCODED}
    assert cfn.response["Status"] == "SUCCESS"


def test_delete_leaves_the_secret_and_calls_nothing(monkeypatch, tmp_path):
    """No Secrets Manager call is queued, so one would fail the test; nor a Kubernetes call."""
    fake = KubeFake([])
    fake.secrets[SECRET] = {"metadata": {"name": "accounting-db"}, "data": {"password": ENCODED}}
    cfn, calls = run(monkeypatch, tmp_path, fake, lambda url: event("Delete", url, PhysicalResourceId=SECRET))
    assert calls == []
    assert SECRET in fake.secrets
    assert cfn.response["Status"] == "SUCCESS" and cfn.response["PhysicalResourceId"] == SECRET


def test_a_refused_read_of_the_secret_fails_the_resource_with_the_reason(monkeypatch, tmp_path):
    fake = KubeFake([])

    def refused(stub: Stubber) -> None:
        stub.add_client_error("get_secret_value", "AccessDeniedException", "not authorized", 400)

    cfn, calls = run(monkeypatch, tmp_path, fake, lambda url: event("Create", url), refused)
    assert calls == []
    assert cfn.response["Status"] == "FAILED"
    assert "AccessDeniedException" in cfn.response["Reason"]
    assert cfn.response["PhysicalResourceId"] == SECRET


def test_a_kubernetes_refusal_fails_the_resource_without_showing_the_password(monkeypatch, tmp_path, caplog):
    """The stand-in repeats the request (the Secret, its data) in its error; neither the
    reason sent to CloudFormation nor the log shows it."""
    caplog.set_level(logging.DEBUG)
    fake = KubeFake([], refuse={"accounting-db"})
    cfn, _ = run(monkeypatch, tmp_path, fake, lambda url: event("Create", url), reads_the_password)
    assert cfn.response["Status"] == "FAILED"
    assert "HTTP 422" in cfn.response["Reason"] and "***" in cfn.response["Reason"]
    assert ENCODED in json.dumps(fake.requests[0].body)  # what the server was sent, and repeated
    assert_hidden(json.dumps(cfn.received), caplog.text)
    assert "Create failed: KubeApiError: POST /api/v1/namespaces/slurm/secrets: HTTP 422" in caplog.text


def test_an_unreachable_api_fails_the_resource(monkeypatch, tmp_path):
    fake = KubeFake([])

    def gone(url: str) -> dict:
        monkeypatch.setenv(ENDPOINT_SETTING, f"https://{HOST}:1")
        return event("Create", url)

    cfn, _ = run(monkeypatch, tmp_path, fake, gone, reads_the_password)
    assert cfn.response["Status"] == "FAILED"
    assert "POST /api/v1/namespaces/slurm/secrets" in cfn.response["Reason"]


@pytest.mark.parametrize(
    ("secret_string", "expected"),
    [
        (PASSWORD, "its SecretString is not JSON with the field password"),
        (
            json.dumps({"username": "slurm", "pass": PASSWORD}),
            "its SecretString is not JSON with the field password",
        ),
        (json.dumps({"password": ""}), "field password is not a non-empty string"),
    ],
)
def test_a_secret_that_holds_no_password_fails_without_quoting_it(
    monkeypatch, tmp_path, secret_string, expected
):
    fake = KubeFake([])

    def answers(stub: Stubber) -> None:
        stub.add_response("get_secret_value", secret_value(secret_string), {"SecretId": ARN})

    cfn, calls = run(monkeypatch, tmp_path, fake, lambda url: event("Create", url), answers)
    assert calls == []
    assert cfn.response["Status"] == "FAILED" and expected in cfn.response["Reason"]
    assert_hidden(json.dumps(cfn.received))


def test_missing_properties_fail_the_resource_naming_them(monkeypatch, tmp_path):
    fake = KubeFake([])
    properties = {k: v for k, v in PROPERTIES.items() if k != settings.KEY_PROPERTY}
    cfn, _ = run(monkeypatch, tmp_path, fake, lambda url: event("Create", url, properties))
    assert cfn.response["Status"] == "FAILED"
    assert f"lacks the properties {settings.KEY_PROPERTY}" in cfn.response["Reason"]


HANDLER_RUN = """
import boto3, json, logging
from gpucluster.agents import accounting_secret, runtime
logging.basicConfig()  # Lambda's runtime gives the root logger its handler
from botocore.stub import Stubber
def client(service, region):
    made = boto3.client(service, region_name=region, aws_access_key_id="x", aws_secret_access_key="x")
    if service == "secretsmanager":
        stub = Stubber(made)
        stub.add_response("get_secret_value", __ANSWER__, {"SecretId": __ARN__})
        stub.activate()
    return made
runtime.client = client
accounting_secret.handler(json.loads(__EVENT__), None)
"""


def test_the_handler_runs_from_its_package_alone(tmp_path):
    fake = KubeFake([])
    with serving(fake, tmp_path), response_url() as cfn:
        code = (
            HANDLER_RUN.replace("__ANSWER__", repr(secret_value()))
            .replace("__ARN__", repr(ARN))
            .replace("__EVENT__", repr(json.dumps(event("Create", cfn.url))))
        )
        settings_env = {
            "GPUCLUSTER_CLUSTER": CLUSTER,
            ENDPOINT_SETTING: fake.endpoint,
            CA_SETTING: fake.ca_data,
            "AWS_REGION": REGION,
        }
        done = run_in_package(tmp_path, settings.HANDLER, code, settings_env)
    assert done.returncode == 0, done.stderr
    assert cfn.response["Status"] == "SUCCESS", cfn.response["Reason"]
    assert fake.secrets[SECRET]["data"] == {"password": ENCODED}
    assert_hidden(done.stdout, done.stderr)


def test_the_package_is_what_the_handler_imports():
    # agent_tree fails on a module that imports anything but the standard library and the SDK.
    package = agent_tree((handler_module(settings.HANDLER),))
    assert settings.HANDLER == "gpucluster.agents.accounting_secret.handler"
    assert "gpucluster/agents/accounting_secret.py" in package
