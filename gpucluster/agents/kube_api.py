"""The few Kubernetes API calls the EKS topology writer makes, over HTTPS with the standard
library, authenticated as its IAM role.

EKS takes an IAM-authenticator token as a bearer token: "k8s-aws-v1." and the base64url
(unpadded) text of a presigned sts:GetCallerIdentity URL whose signature covers the header
x-k8s-aws-id: <cluster name>, valid 60 seconds: what `aws eks get-token` prints
(awscli/customizations/eks/get_token.py). Presigning calls nothing; EKS calls STS with it.
The access entry of the role maps it to a Kubernetes group; RBAC says what the group may do.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

# The settings that tell a function where the API is: the cluster's Kubernetes API endpoint
# (https://...) and its CA (base64 PEM), as AWS::EKS::Cluster's Endpoint and
# CertificateAuthorityData give them (the cluster's name is cluster_names.CLUSTER_SETTING).
ENDPOINT_SETTING = "GPUCLUSTER_KUBERNETES_ENDPOINT"
CA_SETTING = "GPUCLUSTER_KUBERNETES_CA"
TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
# `aws eks get-token`'s: EKS refuses a URL older than this (and the function makes a new one
# each run).
TOKEN_SECONDS = 60
# Each call's bound, well inside the function's timeout.
HTTP_TIMEOUT = 10
# A page of the node list; past it the API's continue token fetches the next.
PAGE = 500


class KubeApiError(RuntimeError):
    """A Kubernetes API call that failed: the method, the path and what the server said, and
    the HTTP status when the server answered (409: it exists already; 404: it does not)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def token(sts: Any, cluster: str) -> str:
    """The bearer token of `sts`'s credentials for EKS cluster `cluster`."""

    def keep_cluster(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if CLUSTER_ID_HEADER in params:
            context[CLUSTER_ID_HEADER] = params.pop(CLUSTER_ID_HEADER)

    def sign_cluster(request: Any, **_: Any) -> None:
        if CLUSTER_ID_HEADER in request.context:
            request.headers[CLUSTER_ID_HEADER] = request.context[CLUSTER_ID_HEADER]

    # GetCallerIdentity has no such parameter: it travels in the context to the signer.
    sts.meta.events.register("provide-client-params.sts.GetCallerIdentity", keep_cluster)
    sts.meta.events.register("before-sign.sts.GetCallerIdentity", sign_cluster)
    url = sts.generate_presigned_url(
        "get_caller_identity",
        Params={CLUSTER_ID_HEADER: cluster},
        ExpiresIn=TOKEN_SECONDS,
        HttpMethod="GET",
    )
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def tls_context(ca_data: str) -> ssl.SSLContext:
    """Trust only the cluster's CA (AWS::EKS::Cluster CertificateAuthorityData: base64 PEM)."""
    return ssl.create_default_context(cadata=base64.b64decode(ca_data).decode())


# (request, timeout) -> response; urllib.request.urlopen with the cluster's TLS context.
Opener = Callable[[urllib.request.Request, float], Any]


def opener(context: ssl.SSLContext) -> Opener:
    return lambda request, timeout: urllib.request.urlopen(request, timeout=timeout, context=context)


HIDDEN = "***"


def redact(text: str, hidden: Sequence[str]) -> str:
    """`text` with each of `hidden` replaced by HIDDEN."""
    for value in hidden:
        text = text.replace(value, HIDDEN)
    return text


class KubeApi:
    """`hidden`: values (a Secret's data) that no error of this client may show: redacted from
    a server's answer before it is cut to length, so that no part of one survives either."""

    def __init__(self, endpoint: str, bearer: str, open_url: Opener, hidden: Sequence[str] = ()) -> None:
        self._endpoint = endpoint.rstrip("/")
        self._bearer = bearer
        self._open = open_url
        self._hidden = tuple(hidden)

    def _call(
        self, method: str, path: str, body: dict[str, Any] | None = None, content_type: str = ""
    ) -> Any:
        request = urllib.request.Request(
            self._endpoint + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {self._bearer}",
                "Accept": "application/json",
                **({"Content-Type": content_type} if content_type else {}),
            },
        )
        try:
            with self._open(request, HTTP_TIMEOUT) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as err:
            detail = redact(err.read().decode(errors="replace"), self._hidden)[:300]
            raise KubeApiError(f"{method} {path}: HTTP {err.code} {detail}", err.code) from err
        except (urllib.error.URLError, OSError, ValueError) as err:
            raise KubeApiError(f"{method} {path}: {redact(str(err), self._hidden)}") from err

    def list_nodes(self, label: str) -> list[Any]:
        """The items of every node carrying label `label` (any value), all pages."""
        items: list[Any] = []
        query = {"labelSelector": label, "limit": str(PAGE)}
        while True:
            page = self._call("GET", "/api/v1/nodes?" + urllib.parse.urlencode(query))
            if not isinstance(page, dict) or not isinstance(page.get("items"), list):
                raise KubeApiError("GET /api/v1/nodes: the answer is not a NodeList")
            items.extend(page["items"])
            more = (page.get("metadata") or {}).get("continue")
            if not more:
                return items
            query["continue"] = more

    def annotate_node(self, name: str, key: str, value: str) -> None:
        """Set one annotation of node `name` (JSON merge patch: the node's other annotations,
        and every other field, stay as they are)."""
        self._call(
            "PATCH",
            f"/api/v1/nodes/{urllib.parse.quote(name, safe='')}",
            {"metadata": {"annotations": {key: value}}},
            "application/merge-patch+json",
        )

    def _secret_path(self, namespace: str, name: str = "") -> str:
        path = f"/api/v1/namespaces/{urllib.parse.quote(namespace, safe='')}/secrets"
        return f"{path}/{urllib.parse.quote(name, safe='')}" if name else path

    def create_secret(self, secret: dict[str, Any]) -> None:
        """Create `secret` (a v1 Secret naming its namespace); HTTP 409 if it exists."""
        self._call("POST", self._secret_path(secret["metadata"]["namespace"]), secret, "application/json")

    def replace_secret(self, secret: dict[str, Any]) -> None:
        """Replace the Secret of `secret`'s name with it (an update without resourceVersion,
        which Secrets allow): keys it lacks are gone afterwards."""
        metadata = secret["metadata"]
        self._call(
            "PUT", self._secret_path(metadata["namespace"], metadata["name"]), secret, "application/json"
        )

    def patch_secret(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """JSON merge patch of one Secret: the keys `patch` names change, the others stay;
        HTTP 404 if there is no such Secret."""
        self._call("PATCH", self._secret_path(namespace, name), patch, "application/merge-patch+json")
