"""slurmrestd as the head's systemd unit starts it, for a suite that has no systemd: the
rendered unit's ExecStart, Environment=, EnvironmentFile= and User=/Group=, read back from
the unit text itself (gpucluster.slurm.rest_api) so the suite runs what the head runs. What
only systemd can give (the sandbox: ProtectSystem=, PrivateTmp=, the capability bounding set)
is not reproduced here."""

from __future__ import annotations

import grp
import pwd
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from tests.integration.host import HarnessError

# systemd's default PATH for services (systemd.exec(5), "Environment variables in spawned processes").
SYSTEMD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class ServiceCommand:
    argv: list[str]
    env: dict[str, str]
    uid: int
    gid: int


def service_settings(unit: str) -> list[tuple[str, str]]:
    """The [Service] section's KEY=VALUE lines, in order."""
    section, found = "", []
    for line in unit.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]":
            key, _, value = line.partition("=")
            found.append((key, value))
    return found


def environment_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines, as systemd reads an EnvironmentFile= (no quoting in ours)."""
    if not path.is_file():
        raise HarnessError(f"the unit's EnvironmentFile {path} is missing (the head writes it at boot)")
    pairs = (line.partition("=") for line in path.read_text().splitlines() if line and line[0] not in "#;")
    return {key: value for key, _, value in pairs}


def service_command(unit: str) -> ServiceCommand:
    settings = service_settings(unit)
    env = {"PATH": SYSTEMD_PATH}
    starts = []
    user = group = ""
    for key, value in settings:
        if key == "Environment":
            name, _, assigned = value.partition("=")
            env[name] = assigned
        elif key == "EnvironmentFile":
            if value.startswith("-"):
                raise HarnessError("the unit's EnvironmentFile is optional ('-'); the head always writes it")
            env.update(environment_file(Path(value)))
        elif key == "ExecStart":
            starts.append(value)
        elif key == "User":
            user = value
        elif key == "Group":
            group = value
    if len(starts) != 1 or starts[0][:1] in "-@+!:":
        raise HarnessError(f"the unit needs exactly one plain ExecStart=, not {starts}")
    argv = []
    for word in shlex.split(starts[0]):
        missing = [name for name in _VARIABLE.findall(word) if name not in env]
        if missing:
            raise HarnessError(f"ExecStart names ${{{missing[0]}}}, which no Environment gives")
        argv.append(_VARIABLE.sub(lambda match: env[match[1]], word))
    return ServiceCommand(argv=argv, env=env, uid=pwd.getpwnam(user).pw_uid, gid=grp.getgrnam(group).gr_gid)
