"""The accounting database's password as a Kubernetes Secret on EKS: the handler of a
CloudFormation custom resource of the EKS stack (constructs_lib/eks/accounting_secret.py).

Slinky's Accounting resource runs slurmdbd with the password from a Kubernetes Secret, and
CloudFormation cannot put a Secrets Manager value into a custom resource's properties, so the
kubectl provider cannot apply that Secret. This function reads the value itself:

- Create: reads the password (a JSON field of the secret's SecretString) with
  secretsmanager:GetSecretValue and creates the Secret, its value base64'd under the key; a
  Secret there already (made by hand, as README once asked) is replaced, not an error.
- Update (the properties changed: a replaced database secret has a new ARN): reads it again
  and patches the key into the Secret (JSON merge patch), creating it if it is gone.
- Delete: leaves the Secret. The namespace goes with the cluster; and a Delete that follows a
  replacement must not remove what the new resource just wrote.

It answers CloudFormation itself (a PUT of the response to the event's ResponseURL), always:
a handler that raised without answering would leave the stack waiting for an hour. The
password is in no response (no Data, NoEcho) and no log line; an error's text is redacted of
it before it is logged or sent (a server's answer before it is cut to length: kube_api), in
case a server repeats the request in its answer.

Settings (the function's environment, written by the EKS stack): GPUCLUSTER_CLUSTER and
kube_api's ENDPOINT_SETTING and CA_SETTING.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import urllib.request
from dataclasses import dataclass
from typing import Any

from gpucluster.agents import runtime
from gpucluster.agents.accounting_secret_settings import (
    KEY_PROPERTY,
    NAME_PROPERTY,
    NAMESPACE_PROPERTY,
    SECRET_ARN_PROPERTY,
    SECRET_FIELD_PROPERTY,
)
from gpucluster.agents.cluster_names import CLUSTER_SETTING
from gpucluster.agents.kube_api import (
    CA_SETTING,
    ENDPOINT_SETTING,
    KubeApi,
    KubeApiError,
    opener,
    redact,
    tls_context,
    token,
)

LOG = logging.getLogger("accounting-secret")
SUCCESS, FAILED = "SUCCESS", "FAILED"
# CloudFormation takes a response body of 4 KiB at most; the reason is the only long part.
REASON_LIMIT = 1500
RESPONSE_TIMEOUT = 10


class SecretError(RuntimeError):
    """The database's secret could not be read as a password."""


@dataclass(frozen=True)
class Target:
    """Where the password comes from and the Kubernetes Secret it goes to."""

    secret_arn: str
    secret_field: str
    namespace: str
    name: str
    key: str

    @classmethod
    def of(cls, properties: dict[str, Any]) -> Target:
        names = (SECRET_ARN_PROPERTY, SECRET_FIELD_PROPERTY, NAMESPACE_PROPERTY, NAME_PROPERTY, KEY_PROPERTY)
        missing = [
            name for name in names if not isinstance(properties.get(name), str) or not properties[name]
        ]
        if missing:
            raise SecretError(f"the custom resource lacks the properties {', '.join(missing)}")
        return cls(*(properties[name] for name in names))

    @property
    def where(self) -> str:
        return f"Secret {self.namespace}/{self.name} (key {self.key})"


def read_password(secretsmanager: Any, target: Target) -> str:
    """The password: field `secret_field` of the secret's JSON SecretString."""
    answer = secretsmanager.get_secret_value(SecretId=target.secret_arn)
    try:
        value = json.loads(answer["SecretString"])[target.secret_field]
    except (KeyError, TypeError, ValueError) as err:
        # The error names the field, never the text around it.
        raise SecretError(
            f"{target.secret_arn}: its SecretString is not JSON with the field {target.secret_field}"
        ) from err
    if not isinstance(value, str) or not value:
        raise SecretError(f"{target.secret_arn}: field {target.secret_field} is not a non-empty string")
    return value


def encoded(password: str) -> str:
    return base64.b64encode(password.encode()).decode()


def secret_object(target: Target, password: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": target.name,
            "namespace": target.namespace,
            "labels": {"app.kubernetes.io/managed-by": "gpucluster"},
        },
        "type": "Opaque",
        "data": {target.key: encoded(password)},
    }


def write(api: KubeApi, target: Target, password: str, request_type: str) -> str:
    """Write the Secret for a Create or an Update; what was done, for the log."""
    if request_type == "Create":
        try:
            api.create_secret(secret_object(target, password))
            return "created"
        except KubeApiError as err:
            if err.status != 409:
                raise
        api.replace_secret(secret_object(target, password))
        return "replaced"
    try:
        api.patch_secret(target.namespace, target.name, {"data": {target.key: encoded(password)}})
        return "patched"
    except KubeApiError as err:
        if err.status != 404:
            raise
    api.create_secret(secret_object(target, password))
    return "created"


def connect(region: str, hidden: list[str]) -> KubeApi:
    return KubeApi(
        os.environ[ENDPOINT_SETTING],
        token(runtime.client("sts", region), os.environ[CLUSTER_SETTING]),
        opener(tls_context(os.environ[CA_SETTING])),
        hidden,
    )


def apply(event: dict[str, Any], hidden: list[str]) -> str:
    """Do what the event asks; the reason to report. Every value that must not be seen is
    added to `hidden` as soon as it is known."""
    request_type = event["RequestType"]
    if request_type == "Delete":
        return "the Secret is left in place: it goes with the cluster's namespace"
    target = Target.of(event["ResourceProperties"])
    region = os.environ["AWS_REGION"]
    password = read_password(runtime.client("secretsmanager", region), target)
    hidden.extend((password, encoded(password)))
    done = write(connect(region, hidden), target, password, request_type)
    return f"{done} {target.where} from {target.secret_arn}"


def respond(event: dict[str, Any], status: str, reason: str, physical_id: str) -> None:
    """PUT the response to the event's presigned ResponseURL, as CloudFormation expects it."""
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason[:REASON_LIMIT],
            "PhysicalResourceId": physical_id,
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "NoEcho": True,
        }
    ).encode()
    # The URL is signed without a content type: sending one would break the signature.
    request = urllib.request.Request(
        event["ResponseURL"],
        data=body,
        method="PUT",
        headers={"Content-Type": "", "Content-Length": str(len(body))},
    )
    with urllib.request.urlopen(request, timeout=RESPONSE_TIMEOUT) as response:
        response.read()


def physical_id(event: dict[str, Any]) -> str:
    """The same id for the resource's life (a new one would make CloudFormation delete the
    old): the Secret's namespace/name."""
    if "PhysicalResourceId" in event:
        return str(event["PhysicalResourceId"])
    properties = event.get("ResourceProperties") or {}
    return f"{properties.get(NAMESPACE_PROPERTY)}/{properties.get(NAME_PROPERTY)}"


def handler(event: dict[str, Any], context: object) -> None:
    """The Lambda entry point: apply the event, then answer CloudFormation, whatever happened."""
    logging.getLogger().setLevel(logging.INFO)
    hidden: list[str] = []
    try:
        status, reason = SUCCESS, apply(event, hidden)
        LOG.info("%s: %s", event["RequestType"], reason)
    # Anything at all: CloudFormation must hear of it (FAILED with the reason), not time out.
    except Exception as err:  # noqa: BLE001
        status, reason = FAILED, redact(f"{type(err).__name__}: {err}", hidden)
        LOG.error("%s failed: %s", event.get("RequestType"), reason)
    respond(event, status, reason, physical_id(event))
