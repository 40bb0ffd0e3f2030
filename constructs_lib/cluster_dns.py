"""Private hosted zone where compute nodes find the Slurm controller.

`slurmctld.<zone>` is the head node's address; the `_slurmctld._tcp` SRV
record is what configless slurmd looks up when started without --conf-server.
"""

from __future__ import annotations

from dataclasses import dataclass

from constructs import Construct

from gpucluster.constructs_lib.cfn import Resource, resource

TTL_SECONDS = "60"


@dataclass(frozen=True)
class ClusterDnsProps:
    cluster: str
    region: str
    zone_name: str
    # The controller's name in the zone (names.controller_host) and the port slurmctld listens on.
    controller_host: str
    slurmctld_port: int
    vpc_id: str
    head_node_private_ip: str


class ClusterDns(Construct):
    zone: Resource

    def __init__(self, scope: Construct, id: str, props: ClusterDnsProps) -> None:
        super().__init__(scope, id)
        zone_name = props.zone_name
        self.zone = resource(
            self,
            "Zone",
            "AWS::Route53::HostedZone",
            {
                "HostedZoneConfig": {"Comment": f"gpucluster {props.cluster}: Slurm controller discovery"},
                "Name": zone_name,
                "VPCs": [{"VPCId": props.vpc_id, "VPCRegion": props.region}],
            },
        )
        self._record("Controller", f"{props.controller_host}.", "A", props.head_node_private_ip)
        self._record(
            "ControllerSrv",
            f"_slurmctld._tcp.{zone_name}.",
            "SRV",
            f"0 0 {props.slurmctld_port} {props.controller_host}.",
        )

    def _record(self, id: str, name: str, type: str, value: str) -> None:
        resource(
            self,
            id,
            "AWS::Route53::RecordSet",
            {
                "HostedZoneId": self.zone.ref_token,
                "Name": name,
                "ResourceRecords": [value],
                "TTL": TTL_SECONDS,
                "Type": type,
            },
        )
