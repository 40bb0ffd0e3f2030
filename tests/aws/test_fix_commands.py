"""The commands in the AWS login fixes, piped to sh: the profile's name (the user's
AWS_PROFILE, whatever it holds) reaches the AWS CLI whole, and nothing else runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from botocore import exceptions as boto

from gpucluster.aws.errors import explain
from gpucluster.aws.login_errors import login_problem
from tests.shell_pipe import HOSTILE_NAMES, pipe_to_sh


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def _expired() -> boto.ClientError:
    return boto.ClientError({"Error": {"Code": "ExpiredToken", "Message": "expired"}}, "GetCallerIdentity")


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_the_login_fixes_hand_aws_the_profile_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv("AWS_PROFILE", name)
    # The fix lists the config file's profiles: none here.
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-such-config"))
    _, missing = login_problem(boto.ProfileNotFound(profile=name))
    _, sso = login_problem(boto.SSOError())
    expired = explain("sts:GetCallerIdentity", "us-east-2", _expired()).fix
    commands = [
        _between(missing, "add it (`", "` or `"),
        _between(missing, "` or `", "`), "),
        _between(sso, "run `", "`, then re-run"),
        _between(expired, "refresh it (`", "`, or new"),
    ]
    run = pipe_to_sh("\n".join(commands) + "\n", ["aws"], tmp_path)
    assert (run.returncode, run.strays) == (0, [])
    assert [call.argv for call in run.calls] == [
        ["configure", "--profile", name],
        ["configure", "sso", "--profile", name],
        ["sso", "login", "--profile", name],
        ["sso", "login", "--profile", name],
    ]
