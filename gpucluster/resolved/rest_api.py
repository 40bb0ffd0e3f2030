"""The REST API resolved: the port and who may reach it, the JWT key's secret the Storage stack
creates and the names the head reads it by."""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster import names
from gpucluster.config import ClusterConfig


@dataclass(frozen=True)
class ResolvedRestApi:
    port: int
    # Sorted, so a reordered list changes no rule.
    allow_cidrs: tuple[str, ...]
    allow_security_groups: tuple[str, ...]
    # Name formats (gpucluster.names); the Storage stack appends its per-stack suffix.
    jwt_secret_name_prefix: str
    jwt_secret_name_pattern: str
    # The SSM parameter (under the storage facts' path) that holds the secret's ARN.
    jwt_secret_parameter: str
    # The only role that may read the key: the head's (NodeRoles names it prefix + role).
    reader_role_name: str
    # The system user slurmrestd runs as.
    user: str


def resolve_rest_api(cfg: ClusterConfig) -> ResolvedRestApi | None:
    rest_api = cfg.rest_api
    if rest_api is None:
        return None
    return ResolvedRestApi(
        port=rest_api.port,
        allow_cidrs=tuple(sorted(str(network) for network in rest_api.allow_cidrs)),
        allow_security_groups=tuple(sorted(rest_api.allow_security_groups)),
        jwt_secret_name_prefix=names.rest_api_jwt_secret_name_prefix(cfg),
        jwt_secret_name_pattern=names.rest_api_jwt_secret_name_pattern(cfg),
        jwt_secret_parameter=names.storage_parameter(cfg, "rest_api_jwt_secret_arn"),
        reader_role_name=f"{names.role_name_prefix(cfg)}head",
        user=names.SLURMRESTD_USER,
    )
