"""What the user does when no answer came back: which endpoint, set by what, and why not.

An endpoint the user set (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>, or endpoint_url
in the AWS config file: boto3 guide, "Service-specific endpoints") is named with the
setting, so a stopped local stand-in is not blamed on the region.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from botocore import exceptions as boto

from gpucluster.aws.login_errors import config_file, profile

NETWORK_ERRORS = (
    boto.ConnectionClosedError,
    boto.ConnectTimeoutError,
    boto.EndpointConnectionError,
    boto.ProxyConnectionError,
    boto.ReadTimeoutError,
    boto.SSLError,
    boto.UnknownEndpointError,
)
# AWS's own endpoint domains (aws.amazon.com: "Service endpoints"); any other host was set by the user.
AWS_DOMAINS = (".amazonaws.com", ".amazonaws.com.cn", ".api.aws")
# The variable suffix is the service id in upper case (SERVICE_QUOTAS for "Service Quotas"),
# which differs from the IAM prefix of a call name only here.
_SERVICE_SUFFIX = {"servicequotas": "SERVICE_QUOTAS", "service-quotas": "SERVICE_QUOTAS"}


def _service(call: str) -> str:
    prefix = call.split(":", 1)[0]
    return _SERVICE_SUFFIX.get(prefix, prefix.upper())


def override(call: str, endpoint_url: str) -> tuple[str, str] | None:
    """(the setting that sent `call` to `endpoint_url`, how to undo it), or None for AWS's own."""
    if os.environ.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "").lower() == "true":
        return None
    for name in (f"AWS_ENDPOINT_URL_{_service(call)}", "AWS_ENDPOINT_URL"):
        if os.environ.get(name):
            return name, f"unset {name}"
    host = urlsplit(endpoint_url).hostname or ""
    if host and not host.endswith(AWS_DOMAINS):
        return f"endpoint_url of profile {profile()} in {config_file()}", "remove that endpoint_url"
    return None


def network_problem(call: str, region: str, exc: Exception) -> tuple[str, str]:
    """(what went wrong, how to fix it) for one of NETWORK_ERRORS."""
    kwargs = getattr(exc, "kwargs", {})
    if isinstance(exc, boto.ProxyConnectionError):
        return (
            f"cannot connect to the proxy {kwargs.get('proxy_url', '')}",
            "check HTTPS_PROXY / HTTP_PROXY (or unset them) and NO_PROXY, then re-run",
        )
    url = str(kwargs.get("endpoint_url", ""))
    setting = override(call, url) if url else None
    if isinstance(exc, boto.SSLError):
        return (
            f"the TLS certificate of {url} could not be verified",
            "behind a proxy that inspects TLS, set AWS_CA_BUNDLE to its CA certificate; then re-run",
        )
    timed_out = isinstance(exc, boto.ReadTimeoutError | boto.ConnectionClosedError)
    what = f"{url} did not answer in time" if timed_out else f"cannot connect to {url}"
    if setting is not None:
        name, undo = setting
        return (
            f"{what}, the endpoint {name} sets",
            f"start what should answer there or fix the URL, or {undo} to use AWS's endpoint in {region}",
        )
    if isinstance(exc, boto.UnknownEndpointError):
        return (
            f"no endpoint is known for this service in region {region}",
            "check the region name; the service may not be offered there",
        )
    if timed_out:
        return what, "check your network and re-run"
    return (
        what,
        f"check your network connection, and that {region} is a region name (like us-east-2) "
        "that offers this service",
    )
