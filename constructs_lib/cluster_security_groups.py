"""Security groups: node-to-node, EFA, storage, and optional SSH to login nodes.

The EFA group allows all traffic from and to itself, both directions, as the
EFA user guide requires; every EFA interface carries it. Slurm uses many ports
(slurmctld, slurmd, srun's ephemeral ports, PMIx), so nodes of one cluster
trust each other fully through the `nodes` group, as ParallelCluster does.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from gpucluster.config import ClusterConfig

LUSTRE_PORTS = ((988, 988), (1018, 1023))
NFS_PORT = 2049


@dataclass(frozen=True)
class ClusterSecurityGroupsProps:
    cfg: ClusterConfig
    vpc_id: str


class ClusterSecurityGroups(Construct):
    nodes: ec2.CfnSecurityGroup
    efa: ec2.CfnSecurityGroup
    storage: ec2.CfnSecurityGroup

    def __init__(self, scope: Construct, id: str, props: ClusterSecurityGroupsProps) -> None:
        super().__init__(scope, id)
        name = props.cfg.name
        all_out = [
            ec2.CfnSecurityGroup.EgressProperty(
                ip_protocol="-1", cidr_ip="0.0.0.0/0", description="Package mirrors, AWS APIs, S3"
            )
        ]

        def group(
            id: str, what: str, egress: list[ec2.CfnSecurityGroup.EgressProperty] | None
        ) -> ec2.CfnSecurityGroup:
            return ec2.CfnSecurityGroup(
                self,
                id,
                group_description=f"gpucluster {name}: {what}",
                vpc_id=props.vpc_id,
                security_group_egress=egress,
            )

        self.nodes = group("Nodes", "head, login and compute nodes", all_out)
        self._all_traffic(
            "NodesFromNodes", self.nodes, self.nodes, "Slurm, srun, PMIx and MPI between cluster nodes"
        )
        self.efa = group("Efa", "EFA, all traffic to and from itself", None)
        self._all_traffic("EfaIn", self.efa, self.efa, "EFA requires all inbound traffic from its own group")
        ec2.CfnSecurityGroupEgress(
            self,
            "EfaOut",
            group_id=self.efa.attr_group_id,
            destination_security_group_id=self.efa.attr_group_id,
            ip_protocol="-1",
            description="EFA requires all outbound traffic to its own group",
        )
        self.storage = group("Storage", "FSx for Lustre and EFS", all_out)
        # (logical id, source group, protocol, from port, to port, description); no ports for "-1".
        ingress: list[tuple[str, ec2.CfnSecurityGroup, str, int | None, int | None, str]] = [
            ("StorageNfs", self.nodes, "tcp", NFS_PORT, NFS_PORT, "NFS to EFS from nodes")
        ]
        ingress += [
            (f"StorageLustre{low}", self.nodes, "tcp", low, high, "Lustre from nodes")
            for low, high in LUSTRE_PORTS
        ]
        ingress += [
            (f"StorageLustreSelf{low}", self.storage, "tcp", low, high, "Lustre between file servers")
            for low, high in LUSTRE_PORTS
        ]
        fsx = props.cfg.storage.fsx_lustre
        if fsx is not None and fsx.efa:
            ingress += [
                ("StorageEfaFromNodes", self.nodes, "-1", None, None, "EFA-enabled Lustre from nodes"),
                ("StorageEfaSelf", self.storage, "-1", None, None, "EFA-enabled Lustre between servers"),
            ]
        for logical, source, protocol, low, high, why in ingress:
            ec2.CfnSecurityGroupIngress(
                self,
                logical,
                group_id=self.storage.attr_group_id,
                source_security_group_id=source.attr_group_id,
                ip_protocol=protocol,
                from_port=low,
                to_port=high,
                description=why,
            )
        if fsx is not None and fsx.efa:
            # EFA traffic is not tracked like TCP: the file servers open flows to
            # clients too, so the clients' group must admit them explicitly.
            self._all_traffic(
                "NodesFromEfaLustre", self.nodes, self.storage, "EFA-enabled Lustre servers to clients"
            )

    def _all_traffic(
        self, id: str, into: ec2.CfnSecurityGroup, source: ec2.CfnSecurityGroup, why: str
    ) -> None:
        """Admit every protocol and port into `into` from members of `source`."""
        ec2.CfnSecurityGroupIngress(
            self,
            id,
            group_id=into.attr_group_id,
            source_security_group_id=source.attr_group_id,
            ip_protocol="-1",
            description=why,
        )
