"""A workstation's AWS login, written for real: a config file, an SSO token cache, the
variables botocore reads. botocore's own credential chain then fails as it would for a
user, before any request leaves the machine (nothing here reaches a network)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import botocore.credentials
import botocore.tokens
import pytest

START_URL = "https://corp.awsapps.com/start"
SSO_SESSION = f"""\
[profile dev]
sso_session = corp
sso_account_id = 111122223333
sso_role_name = Admin
[sso-session corp]
sso_start_url = {START_URL}
sso_region = us-east-1
"""
LEGACY_SSO = f"""\
[profile dev]
sso_start_url = {START_URL}
sso_region = us-east-1
sso_account_id = 111122223333
sso_role_name = Admin
"""


@dataclass(frozen=True)
class Login:
    """One broken login: the config file, AWS_PROFILE, the SSO token (by cache key) and
    what the one error line must say to fix it."""

    config: str
    profile: str | None
    fix: str
    token_key: str | None = None


def _expired_token_for(key: str) -> tuple[str, dict[str, str]]:
    expired = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    token = {"accessToken": "expired", "expiresAt": expired, "region": "us-east-1", "startUrl": START_URL}
    # botocore's cache key: the SHA-1 of the sso-session name, or of the start URL (legacy).
    return hashlib.sha1(key.encode()).hexdigest() + ".json", token


def logins(config_file: Path) -> dict[str, Login]:
    failing = f'{sys.executable} -c "raise SystemExit(3)"'
    return {
        "profile missing": Login(
            "[default]\nregion = us-east-2\n",
            "nosuch",
            f"profile nosuch is not in {config_file} (profiles there: default); add it",
        ),
        "config unparseable": Login(
            "[default\nregion = us-east-2\n", None, f"the AWS config file {config_file} cannot be parsed"
        ),
        "credential_process fails": Login(
            f"[default]\ncredential_process = {failing}\n",
            None,
            "run the profile's credential_process by hand to see why it fails",
        ),
        "SSO never logged in": Login(SSO_SESSION, "dev", "run `aws sso login --profile dev`"),
        "SSO session expired": Login(SSO_SESSION, "dev", "run `aws sso login --profile dev`", "corp"),
        "legacy SSO expired": Login(LEGACY_SSO, "dev", "run `aws sso login --profile dev`", START_URL),
        "no credentials": Login(
            "[default]\nregion = us-east-2\n", None, "no AWS credentials found for profile default"
        ),
    }


@pytest.fixture
def workstation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No AWS variables but ours; the AWS config file at the returned path; botocore's
    default session made afresh; the SSO token cache under tmp_path."""
    for key in list(os.environ):
        if key.startswith("AWS_"):
            monkeypatch.delenv(key)
    config = tmp_path / "aws-config"
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    # The instance metadata service would be asked last for credentials: not on a workstation.
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("GPUCLUSTER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    cache = tmp_path / "sso-cache"
    cache.mkdir()
    # botocore reads ~/.aws/sso/cache, expanded when it was imported.
    monkeypatch.setattr(botocore.credentials.SSOProvider, "_SSO_TOKEN_CACHE_DIR", str(cache))
    monkeypatch.setattr(botocore.tokens.SSOTokenProvider, "_SSO_TOKEN_CACHE_DIR", str(cache))
    yield config


def log_in(config: Path, login: Login, monkeypatch: pytest.MonkeyPatch) -> None:
    config.write_text(login.config)
    if login.profile:
        monkeypatch.setenv("AWS_PROFILE", login.profile)
    if login.token_key:
        name, token = _expired_token_for(login.token_key)
        cache = Path(botocore.credentials.SSOProvider._SSO_TOKEN_CACHE_DIR)
        (cache / name).write_text(json.dumps(token))
