"""Private hosted zone where compute nodes find the Slurm controller.

`slurmctld.<zone>` is the head node's address; the `_slurmctld._tcp` SRV
record is what configless slurmd looks up when started without --conf-server.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_route53 as route53
from constructs import Construct

from gpucluster import names
from gpucluster.config import ClusterConfig
from gpucluster.slurm.conf import SlurmSite

TTL_SECONDS = "60"


@dataclass(frozen=True)
class ClusterDnsProps:
    cfg: ClusterConfig
    vpc_id: str
    head_node_private_ip: str


class ClusterDns(Construct):
    zone: route53.CfnHostedZone

    def __init__(self, scope: Construct, id: str, props: ClusterDnsProps) -> None:
        super().__init__(scope, id)
        cfg = props.cfg
        zone_name = names.private_zone(cfg)
        self.zone = route53.CfnHostedZone(
            self,
            "Zone",
            name=zone_name,
            vpcs=[route53.CfnHostedZone.VPCProperty(vpc_id=props.vpc_id, vpc_region=cfg.region)],
            hosted_zone_config=route53.CfnHostedZone.HostedZoneConfigProperty(
                comment=f"gpucluster {cfg.name}: Slurm controller discovery"
            ),
        )
        self._record("Controller", f"{names.controller_host(cfg)}.", "A", props.head_node_private_ip)
        self._record(
            "ControllerSrv",
            f"_slurmctld._tcp.{zone_name}.",
            "SRV",
            f"0 0 {SlurmSite().slurmctld_port} {names.controller_host(cfg)}.",
        )

    def _record(self, id: str, name: str, type: str, value: str) -> None:
        route53.CfnRecordSet(
            self,
            id,
            hosted_zone_id=self.zone.ref,
            name=name,
            type=type,
            ttl=TTL_SECONDS,
            resource_records=[value],
        )
