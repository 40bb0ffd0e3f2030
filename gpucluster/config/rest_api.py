"""`rest_api:`: slurmrestd on the head node, taking JSON Web Tokens, and who may reach it.

The head sits on a private subnet: only what routes into the VPC (its own subnets, a peered
VPC, a VPN or Direct Connect) can reach it at all, and its REST security group admits nobody
until `allow_cidrs` or `allow_security_groups` names someone. The cluster's own nodes always
reach it (they trust each other fully, gpucluster.constructs_lib.cluster_security_groups).

It needs no `accounting:`: slurmrestd serves the job, node and partition endpoints (`slurm/`)
with slurmctld alone; with accounting on, the `slurmdb/` endpoints too.
"""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from gpucluster.config.allow_lists import AllowedCidrs
from gpucluster.config.fields import SecurityGroupId, StrictModel, fail, fail_at

# slurm.conf(5)'s and slurmrestd's upstream unit's defaults.
SLURMRESTD_PORT = 6820
# Ports Slurm's own daemons take on the head (slurmctld, slurmd, slurmdbd): slurmrestd on one
# of them would fail to bind, or take the port from the daemon that starts after it.
SLURM_DAEMON_PORTS = {6817: "slurmctld", 6818: "slurmd", 6819: "slurmdbd"}


class RestApiConfig(StrictModel):
    port: int = Field(
        default=SLURMRESTD_PORT,
        ge=1024,
        le=65535,
        description="TCP port slurmrestd listens on at the head's private address. 1024 or above: "
        "slurmrestd runs as an unprivileged user without capabilities.",
    )
    allow_cidrs: AllowedCidrs = Field(
        default_factory=list,
        description="IPv4 ranges allowed to reach the port (e.g. a VPN's range); empty: none besides "
        "the cluster's nodes. 0.0.0.0/0, or ranges that together cover every address, is refused: "
        "name the networks your clients are in, or a security group.",
    )
    allow_security_groups: list[SecurityGroupId] = Field(
        default_factory=list,
        description="Security groups (of the cluster's VPC or a peered one) whose members may reach it.",
    )

    @field_validator("port")
    @classmethod
    def _not_a_slurm_port(cls, value: int) -> int:
        if value in SLURM_DAEMON_PORTS:
            raise fail(
                "port",
                f"{value} is {SLURM_DAEMON_PORTS[value]}'s port on the head; use another, "
                f"e.g. Slurm's default for slurmrestd, {SLURMRESTD_PORT}",
            )
        return value

    @model_validator(mode="after")
    def _each_once(self) -> RestApiConfig:
        for field, listed in (
            ("allow_cidrs", [str(network) for network in self.allow_cidrs]),
            ("allow_security_groups", list(self.allow_security_groups)),
        ):
            repeated = sorted({entry for entry in listed if listed.count(entry) > 1})
            if repeated:
                raise fail_at(field, f"lists {', '.join(repeated)} more than once; list each once")
        return self
