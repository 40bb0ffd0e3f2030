"""slurmrestd with JWT on the real cluster (issue 27): a job submitted and read back over
HTTP with a token from `scontrol token`; no token, or one signed by another key, refused."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from gpucluster.slurm.rest_api import API_VERSION
from tests.integration.accounting import REST_URL, SLURMRESTD_PORT, SuiteAccounting
from tests.integration.accounting_daemons import ACCOUNT_USER, OUTSIDER
from tests.integration.cluster import SlurmCluster
from tests.integration.network import CONTROLLER_IP

pytestmark = pytest.mark.slurm

# Every data parser the pinned build has (FACTS: v0.0.41-44); the newest.
API = "slurm/v0.0.44"
JOB_TIMEOUT = 60
# slurmrestd refuses a request without a token itself; a token slurmctld cannot verify it
# passes on, and slurmctld's refusal (ESLURM_PROTOCOL_AUTH...) comes back as 511.
UNAUTHORIZED = 401
REST_API_LIB = Path(__file__).resolve().parents[2] / "templates/userdata/bundle/lib/rest_api.sh"
NETWORK_AUTHENTICATION_REQUIRED = 511


@pytest.fixture(scope="module")
def restd(slurm_accounting: SuiteAccounting) -> SuiteAccounting:
    slurm_accounting.start_restd()
    return slurm_accounting


def token_from_scontrol(cluster: SlurmCluster, user: str) -> str:
    output = cluster.slurm("scontrol", "token", f"username={user}", "lifespan=600").stdout.strip()
    assert output.startswith("SLURM_JWT="), output
    return output.removeprefix("SLURM_JWT=")


def token_signed_by(key: bytes, user: str) -> str:
    """An HS256 token with the claims Slurm's own carry, signed by `key`."""

    def encode(part: bytes) -> str:
        return base64.urlsafe_b64encode(part).rstrip(b"=").decode()

    now = int(time.time())
    header = encode(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = encode(json.dumps({"iat": now, "exp": now + 600, "sun": user}).encode())
    signature = hmac.new(key, f"{header}.{claims}".encode(), hashlib.sha256).digest()
    return f"{header}.{claims}.{encode(signature)}"


def call(path: str, headers: dict[str, str], body: dict | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"{REST_URL}/{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **headers},
        method="GET" if body is None else "POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        text = error.read()
        return error.code, json.loads(text) if text.strip().startswith(b"{") else {"body": text.decode()}


def as_user(user: str, token: str) -> dict[str, str]:
    return {"X-SLURM-USER-NAME": user, "X-SLURM-USER-TOKEN": token}


def test_a_job_is_submitted_and_read_back_over_http(cluster: SlurmCluster, restd: SuiteAccounting):
    headers = as_user(ACCOUNT_USER, token_from_scontrol(cluster, ACCOUNT_USER))
    job = {
        "script": "#!/bin/bash\nsleep 1\n",
        "name": "over-http",
        "current_working_directory": "/tmp",
        "standard_output": "/dev/null",
        "environment": ["PATH=/usr/bin:/bin"],
        "tres_per_job": "gres/gpu:1",
    }
    status, submitted = call(f"{API}/job/submit", headers, {"job": job})
    assert status == 200 and not submitted.get("errors"), submitted
    job_id = str(submitted["job_id"])
    info = cluster.wait_job_state(job_id, {"COMPLETED"}, JOB_TIMEOUT)
    assert info["JobName"] == "over-http" and info["UserId"].startswith(f"{ACCOUNT_USER}("), info
    status, read = call(f"{API}/job/{job_id}", headers)
    assert status == 200, read
    (record,) = read["jobs"]
    assert record["name"] == "over-http" and record["user_name"] == ACCOUNT_USER, record


def test_a_request_without_a_token_is_refused(restd: SuiteAccounting):
    status, body = call(f"{API}/jobs", {"X-SLURM-USER-NAME": ACCOUNT_USER})
    assert status == UNAUTHORIZED, body


def test_a_token_signed_by_another_key_is_refused(cluster: SlurmCluster, restd: SuiteAccounting):
    key = Path(restd.site.jwt_key).read_bytes()
    other = secrets.token_bytes(len(key))
    assert other != key
    status, body = call(f"{API}/jobs", as_user(ACCOUNT_USER, token_signed_by(other, ACCOUNT_USER)))
    assert status == NETWORK_AUTHENTICATION_REQUIRED, body
    assert body["jobs"] == [] and "Protocol authentication error" in json.dumps(body["errors"]), body
    # The same claims signed by the cluster's key pass: the key alone made the difference.
    status, body = call(f"{API}/jobs", as_user(ACCOUNT_USER, token_signed_by(key, ACCOUNT_USER)))
    assert status == 200, body


def test_the_jwt_key_is_private(restd: SuiteAccounting):
    assert os.stat(restd.site.jwt_key).st_mode & 0o777 == 0o600


def test_the_heads_probe_passes_for_a_user_in_no_account(cluster: SlurmCluster, restd: SuiteAccounting):
    """The head's boot waits on lib/rest_api.sh's slurmrestd_answers, which pings with a token
    of slurmrestd's own user; that user is in no account, and AccountingStorageEnforce must
    not refuse its ping. Run the function itself against the suite's daemons."""
    probe = (
        f"source {REST_API_LIB} && "
        f"SLURMRESTD_USER={OUTSIDER} SLURMRESTD_ADDRESS={CONTROLLER_IP} SLURMRESTD_PORT={SLURMRESTD_PORT} "
        f"SLURMRESTD_API={API_VERSION} SLURMRESTD_PROBE_TIMEOUT=10 slurmrestd_answers"
    )
    result = subprocess.run(
        cluster.install.command(["bash", "-c", probe]),
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
