"""The cluster's people as every node creates them (gpucluster.config.users)."""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.config import ClusterConfig


@dataclass(frozen=True)
class ResolvedUser:
    name: str
    uid: int
    group: str
    gid: int
    ssh_keys: tuple[str, ...]
    admin: bool


def resolve_users(cfg: ClusterConfig) -> tuple[ResolvedUser, ...]:
    return tuple(
        ResolvedUser(
            name=user.name,
            uid=user.uid,
            group=user.group_name,
            gid=user.group_id,
            ssh_keys=tuple(user.ssh_keys),
            admin=user.admin,
        )
        for user in cfg.users
    )
