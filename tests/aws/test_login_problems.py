"""Every AWS verb meets each broken login as botocore raises it (a profile not in the
config, a config that cannot be parsed, a failing credential_process, SSO never logged in
or expired, no credentials): one line naming the fix, exit 1, never "a bug in gpucluster";
preflight's credentials row says the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster.cli import app
from tests.aws.config_text import COMMENTED_CONFIG
from tests.aws.login import log_in, logins, workstation
from tests.aws.test_verb_errors import EXAMPLE, verbs

__all__ = ["workstation"]
CASES = list(logins(Path("x")))


def _arguments(tmp_path: Path, verb: str) -> list[str]:
    commented = tmp_path / "commented.yaml"
    commented.write_text(COMMENTED_CONFIG)
    example = tmp_path / "example.yaml"
    example.write_text(EXAMPLE.read_text())
    return verbs(commented, example)[verb][0]


@pytest.mark.parametrize("verb", ["find", "buy", "show", "wait", "extend", "ami pin"])
@pytest.mark.parametrize("case", CASES)
def test_a_broken_login_is_one_line_with_its_fix(
    workstation: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verb: str, case: str
) -> None:
    login = logins(workstation)[case]
    log_in(workstation, login, monkeypatch)
    result = CliRunner().invoke(app, _arguments(tmp_path, verb))
    assert result.exit_code == 1, result.output
    (line,) = [line for line in result.stderr.splitlines() if not line.startswith("warning ")]
    assert line.startswith("error aws "), line
    assert login.fix in line, line
    assert "internal error" not in line and "report it" not in line


@pytest.mark.parametrize("case", CASES)
def test_preflight_gives_the_same_fix_in_its_credentials_row(
    workstation: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    from gpucluster.config.loader import load_config
    from gpucluster.preflight.result import FAIL, SKIP
    from gpucluster.preflight.run import preflight

    login = logins(workstation)[case]
    log_in(workstation, login, monkeypatch)
    credentials, *others = preflight(load_config(EXAMPLE))
    assert credentials.status == FAIL
    assert login.fix in f"{credentials.detail}; {credentials.fix}"
    assert "report it" not in credentials.fix
    assert {(row.status, row.detail) for row in others} == {(SKIP, "needs working credentials")}


def test_preflight_exits_1_on_a_broken_login(workstation: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log_in(workstation, logins(workstation)["profile missing"], monkeypatch)
    result = CliRunner().invoke(app, ["preflight", str(EXAMPLE)])
    assert result.exit_code == 1, result.output
    assert "profile nosuch is not in" in " ".join(result.stdout.split())
