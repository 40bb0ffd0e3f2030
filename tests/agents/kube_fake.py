"""A local stand-in for the Kubernetes API that the EKS topology writer calls: HTTPS on
127.0.0.1 with a self-signed certificate made here, nodes served as NodeList pages (with the
API's continue token), every request recorded, JSON merge patches applied to the nodes, and
chosen nodes' patches refused; Secrets created, replaced and merge-patched as the API does
(409 on a create of one that exists, 404 on an update of one that does not), and chosen
Secrets' writes refused with an answer that repeats the request, as a careless server might."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import ssl
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from gpucluster.agents.node_annotations import ANNOTATION, INSTANCE_TYPE_LABEL
from gpucluster.eks.labels import compute_group_labels

HOST = "127.0.0.1"


def k8s_node(
    name: str, instance_id: str, instance_type: str, group: str | None = "gpu", annotation: str | None = None
) -> dict[str, Any]:
    labels = {INSTANCE_TYPE_LABEL: instance_type, "kubernetes.io/hostname": name}
    if group is not None:
        labels |= compute_group_labels(group)
    metadata: dict[str, Any] = {"name": name, "labels": labels, "annotations": {"other": "kept"}}
    if annotation is not None:
        metadata["annotations"][ANNOTATION] = annotation
    return {"metadata": metadata, "spec": {"providerID": f"aws:///us-east-2a/{instance_id}"}}


def self_signed(directory: Path) -> tuple[Path, Path, str]:
    """A certificate for 127.0.0.1 (and its key), and its PEM base64-encoded as EKS gives a
    cluster's CertificateAuthorityData."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-fake")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(pem)
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path, base64.b64encode(pem).decode()


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class KubeFake:
    nodes: list[dict[str, Any]]
    page_size: int = 500
    refuse: set[str] = field(default_factory=set)
    requests: list[Request] = field(default_factory=list)
    # "namespace/name" -> the Secret as stored.
    secrets: dict[str, dict[str, Any]] = field(default_factory=dict)
    endpoint: str = ""
    ca_data: str = ""

    def patches(self) -> dict[str, Any]:
        return {r.path.rsplit("/", 1)[1]: r.body for r in self.requests if r.method == "PATCH"}

    def node(self, name: str) -> dict[str, Any]:
        return next(n for n in self.nodes if n["metadata"]["name"] == name)

    def answer(self, request: Request) -> tuple[int, Any]:
        self.requests.append(request)
        if request.method == "GET" and request.path == "/api/v1/nodes":
            start = int(request.query.get("continue", ["0"])[0])
            page = self.nodes[start : start + self.page_size]
            more = start + self.page_size < len(self.nodes)
            return 200, {
                "kind": "NodeList",
                "metadata": {"continue": str(start + self.page_size)} if more else {},
                "items": page,
            }
        if request.method == "PATCH" and request.path.startswith("/api/v1/nodes/"):
            name = urllib.parse.unquote(request.path.rsplit("/", 1)[1])
            if name in self.refuse:
                return 500, {"kind": "Status", "message": f"etcd timeout on {name}"}
            metadata = self.node(name)["metadata"]
            metadata.setdefault("annotations", {}).update(request.body["metadata"]["annotations"])
            return 200, self.node(name)
        if "/secrets" in request.path:
            return self._secret(request)
        return 404, {"kind": "Status", "message": "not found"}

    def _secret(self, request: Request) -> tuple[int, Any]:
        parts = request.path.split("/")  # /api/v1/namespaces/<ns>/secrets[/<name>]
        namespace = urllib.parse.unquote(parts[4])
        name = urllib.parse.unquote(parts[6]) if len(parts) > 6 else request.body["metadata"]["name"]
        key = f"{namespace}/{name}"
        if name in self.refuse:
            return 422, {"kind": "Status", "message": f"invalid: {json.dumps(request.body)}"}
        if request.method == "POST":
            if key in self.secrets:
                return 409, {"kind": "Status", "reason": "AlreadyExists", "message": f"{name} exists"}
            self.secrets[key] = request.body
            return 201, request.body
        if key not in self.secrets:
            return 404, {"kind": "Status", "reason": "NotFound", "message": f"{name} not found"}
        if request.method == "PUT":
            self.secrets[key] = request.body
        elif request.method == "PATCH":
            for field_name, value in request.body.items():
                self.secrets[key].setdefault(field_name, {}).update(value)
        else:
            return 405, {"kind": "Status", "message": f"{request.method} not allowed"}
        return 200, self.secrets[key]


def _handler(fake: KubeFake) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            request = Request(
                self.command,
                url.path,
                urllib.parse.parse_qs(url.query),
                {k.lower(): v for k, v in self.headers.items()},
                json.loads(raw) if raw else None,
            )
            status, body = fake.answer(request)
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_PATCH = do_POST = do_PUT = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serving(fake: KubeFake, directory: Path) -> Iterator[KubeFake]:
    cert, key, fake.ca_data = self_signed(directory)
    server = ThreadingHTTPServer((HOST, 0), _handler(fake))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    fake.endpoint = f"https://{HOST}:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
