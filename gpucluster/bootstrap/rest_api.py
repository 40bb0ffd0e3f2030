"""What the head's bootstrap needs for the REST API (lib/rest_api.sh): the JWT key's secret and
where the key goes, slurmrestd's user and unit, and the port it answers on."""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.resolved import ResolvedCluster
from gpucluster.slurm import rest_api
from gpucluster.slurm.accounting import JWT_KEY_BYTES
from gpucluster.slurm.site import SlurmSite


@dataclass(frozen=True)
class RestApiBoot:
    """Empty strings, 0 and False where the cluster has no REST API."""

    enabled: bool
    jwt_secret_parameter: str
    # Mode 600, owned by SlurmUser: auth/jwt refuses a key others may read (auth_jwt.c).
    jwt_key: str
    # The head refuses a shorter key (a secret edited by hand): HS256 wants at least 256 bits.
    jwt_key_min_bytes: int
    user: str
    unit: str
    unit_file: str
    address_file: str
    address_variable: str
    port: int
    api_version: str


def rest_api_boot(resolved: ResolvedCluster, site: SlurmSite) -> RestApiBoot:
    settings = resolved.rest_api
    return RestApiBoot(
        enabled=settings is not None,
        jwt_secret_parameter=settings.jwt_secret_parameter if settings is not None else "",
        jwt_key=site.accounting.jwt_key,
        jwt_key_min_bytes=JWT_KEY_BYTES,
        user=site.rest_api.user,
        unit=rest_api.UNIT,
        unit_file=rest_api.UNIT_PATH,
        address_file=site.rest_api.address_file,
        address_variable=rest_api.ADDRESS_VARIABLE,
        port=settings.port if settings is not None else 0,
        api_version=rest_api.API_VERSION,
    )


def head_files(resolved: ResolvedCluster, site: SlurmSite) -> dict[str, str]:
    """slurmrestd's unit, which the head installs when the cluster has the REST API."""
    if resolved.rest_api is None:
        return {}
    return {
        rest_api.UNIT_PATH: rest_api.render_unit(
            resolved.rest_api, site.rest_api, slurm_conf=f"{site.config_dir}/slurm.conf"
        )
    }
