"""slurmrestd on the head node, as its systemd unit says: its own unprivileged user, JSON Web
Tokens only, the head's private address, and a sandbox that leaves it nothing it does not need.

The unit replaces the one the Slurm package installs (/usr/lib/systemd/system/slurmrestd.service,
which listens on every address): a unit of the same name in /etc/systemd/system takes its place.
The suite runs slurmrestd from this same rendered unit (tests/integration/restd_unit.py).

The head writes its private address at boot (lib/rest_api.sh) into `RestApiSite.address_file`
as `SLURMRESTD_ADDRESS=...`, which the unit's ExecStart names; the rest is rendered here.
SLURMRESTD_SECURITY is left unset: each of its values relaxes a default protection
(slurmrestd(8): become_user, disable_user_check, disable_unshare_files, disable_unshare_sysv).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster import names
from gpucluster.rendering import render
from gpucluster.resolved.rest_api import ResolvedRestApi

TEMPLATE = "slurm/slurmrestd.service.j2"
UNIT = "slurmrestd.service"
UNIT_PATH = f"/etc/systemd/system/{UNIT}"
ADDRESS_VARIABLE = "SLURMRESTD_ADDRESS"
# rest_auth/jwt alone: a TCP client proves who it is with a token; rest_auth/local (Unix
# socket peers) is no use on a TCP listener.
AUTH_PLUGIN = "rest_auth/jwt"
# SLURM_JWT=daemon: slurmrestd speaks to slurmctld and slurmdbd with each caller's token
# (auth/jwt) instead of munge, so a request runs as its token's user (Slurm's JWT guide).
ENVIRONMENT = {"SLURM_JWT": "daemon"}
# The newest OpenAPI data parser of the pinned 25.11.7 (src/plugins/data_parser/v0.0.41-44).
API_VERSION = "v0.0.44"


@dataclass(frozen=True)
class RestApiSite:
    """Where slurmrestd lives on a host; defaults are production (the suite has its own)."""

    user: str = names.SLURMRESTD_USER
    # The user's own group (useradd --user-group), which holds nobody else.
    group: str = names.SLURMRESTD_USER
    program: str = "/usr/sbin/slurmrestd"
    address_file: str = "/etc/slurm/slurmrestd.address"


def render_unit(rest_api: ResolvedRestApi, site: RestApiSite, slurm_conf: str) -> str:
    return render(
        TEMPLATE,
        rest_api=rest_api,
        site=site,
        slurm_conf=slurm_conf,
        address_variable=ADDRESS_VARIABLE,
        auth_plugin=AUTH_PLUGIN,
        environment=ENVIRONMENT,
    )
