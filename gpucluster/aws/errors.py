"""One line per AWS failure: which call, in which region, what went wrong, how to fix it.

botocore raises ClientError (AWS answered with an error code) or BotoCoreError (no
answer: a login or config problem on the workstation, no endpoint, a timeout).
`aws_call` turns both into AwsError, which the command runner prints as
`error aws CALL (REGION): what; fix` without a traceback, and exits 1.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from gpucluster.env_problem import EnvironmentProblem

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


# What a failure says about the next call: a login problem fails every call the same
# way; a network one may pass on a retry; AWS's answer is about this call only.
Kind = Literal["login", "network", "answer"]


class AwsError(EnvironmentProblem):
    """An AWS call failed; `line` says which call, what happened and what to do."""

    def __init__(self, call: str, region: str, what: str, fix: str, kind: Kind = "answer") -> None:
        self.call = call
        self.region = region
        self.kind = kind
        super().__init__(f"aws {call} ({region})", what, fix)


def explain(call: str, region: str, exc: Exception) -> AwsError:
    """The AwsError for a botocore exception raised by `call` in `region`."""
    from botocore.exceptions import ClientError

    from gpucluster.aws.login_errors import LOGIN_ERRORS, login_problem
    from gpucluster.aws.network_errors import NETWORK_ERRORS, network_problem

    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return _from_code(
            call, region, str(error.get("Code", "")), " ".join(str(error.get("Message", "")).split())
        )
    if isinstance(exc, LOGIN_ERRORS):
        return AwsError(call, region, *login_problem(exc), kind="login")
    if isinstance(exc, NETWORK_ERRORS):
        return AwsError(call, region, *network_problem(call, region, exc), kind="network")
    if isinstance(exc, ValueError) and str(exc).startswith("Invalid endpoint"):
        # botocore checks an endpoint URL's form when it makes the client, before any call.
        return AwsError(
            call,
            region,
            f"{' '.join(str(exc).split())} (from AWS_ENDPOINT_URL* or endpoint_url in the AWS config)",
            "set it to a URL like http://localhost:5000, or unset it",
            kind="login",
        )
    return AwsError(
        call,
        region,
        f"{type(exc).__name__}: {' '.join(str(exc).split())}",
        "re-run; if it persists, report it",
    )


def _from_code(call: str, region: str, code: str, message: str) -> AwsError:
    from gpucluster.aws.login_errors import sso_login

    said = f"{code}: {message}" if message else code
    if code in EXPIRED | INVALID_CREDENTIALS:
        fix = (
            f"your AWS session expired; refresh it (`{sso_login()}`, or new temporary credentials) and re-run"
            if code in EXPIRED
            else "the credentials are not valid here; check AWS_PROFILE and the access key, "
            f"and that region {region} is enabled for the account"
        )
        return AwsError(call, region, said, fix, kind="login")
    if code in ACCESS_DENIED:
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
