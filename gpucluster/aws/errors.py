"""One line per AWS failure: which call, in which region, what went wrong, how to fix it.

botocore raises ClientError (AWS answered with an error code) or BotoCoreError (no
answer: no credentials, no endpoint, a timeout). `aws_call` turns both into AwsError,
which the command runner prints without a traceback and exits 1.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

# Error codes by what the user does about them. Codes from the EC2 API reference
# ("Error codes": https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html)
# and the common errors every AWS query API returns.
EXPIRED = frozenset({"ExpiredToken", "ExpiredTokenException", "RequestExpired", "TokenRefreshRequired"})
INVALID_CREDENTIALS = frozenset(
    {"AuthFailure", "InvalidClientTokenId", "UnrecognizedClientException", "SignatureDoesNotMatch"}
)
ACCESS_DENIED = frozenset(
    {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnauthorizedException"}
)
THROTTLED = frozenset(
    {"Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException"}
)
REGION_NOT_USABLE = frozenset({"OptInRequired", "InvalidRegion", "UnsupportedOperation"})
NO_CAPACITY = frozenset(
    {"InsufficientInstanceCapacity", "InsufficientCapacity", "InsufficientReservedInstanceCapacity"}
)


class AwsError(Exception):
    """An AWS call failed; `line` says which call, what happened and what to do."""

    def __init__(self, call: str, region: str, what: str, fix: str) -> None:
        self.call = call
        self.region = region
        self.line = f"{call} ({region}): {what}; {fix}"
        super().__init__(self.line)


def explain(call: str, region: str, exc: Exception) -> AwsError:
    """The AwsError for a botocore exception raised by `call` in `region`."""
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
        ReadTimeoutError,
        UnknownEndpointError,
    )

    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return _from_code(
            call, region, str(error.get("Code", "")), " ".join(str(error.get("Message", "")).split())
        )
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return AwsError(
            call,
            region,
            "no AWS credentials found",
            "run `aws configure` or `aws sso login`, or set AWS_PROFILE, then re-run",
        )
    if isinstance(exc, EndpointConnectionError | UnknownEndpointError | NoRegionError):
        return AwsError(
            call,
            region,
            f"cannot reach the endpoint of region {region}",
            "check the region name and your network; the service may not be offered in that region",
        )
    if isinstance(exc, ReadTimeoutError):
        return AwsError(call, region, "AWS did not answer in time", "check your network and re-run")
    return AwsError(
        call,
        region,
        f"{type(exc).__name__}: {' '.join(str(exc).split())}",
        "re-run; if it persists, report it",
    )


def _from_code(call: str, region: str, code: str, message: str) -> AwsError:
    said = f"{code}: {message}" if message else code
    if code in EXPIRED:
        fix = (
            "your AWS session expired; refresh it (`aws sso login`, or new temporary credentials) and re-run"
        )
    elif code in INVALID_CREDENTIALS:
        fix = (
            "the credentials are not valid here; check AWS_PROFILE and the access key, "
            f"and that region {region} is enabled for the account"
        )
    elif code in ACCESS_DENIED:
        fix = (
            f"your IAM identity may not call {call}; add that action to its policy or use a role that has it"
        )
    elif code in THROTTLED:
        fix = "AWS throttled the call even after retries; wait a minute and re-run"
    elif code in REGION_NOT_USABLE:
        fix = (
            f"region {region} does not offer this call to the account; "
            "enable the region (opt-in) or use another one"
        )
    elif code in NO_CAPACITY:
        fix = (
            "AWS has no capacity for it now; pick another offering, Availability Zone "
            "or date (`gpucluster capacity find`)"
        )
    elif code.endswith("NotFound") or code.endswith(".NotFound"):
        fix = f"it does not exist in {region} for this account; check the name or id, and the region"
    else:
        fix = "see AWS's message; fix the input it names and re-run"
    return AwsError(call, region, said, fix)


@contextmanager
def aws_call(call: str, region: str) -> Iterator[None]:
    """Wrap one AWS call (`call` as IAM names the action, e.g. ec2:PurchaseCapacityBlock)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except (ClientError, BotoCoreError) as exc:
        raise explain(call, region, exc) from None
