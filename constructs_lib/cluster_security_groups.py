"""Security groups: node-to-node, EFA, storage, and the head's own group (the accounting
database's only client; the REST API's port, closed until the config names who may reach it).

The EFA group allows all traffic from and to itself, both directions, as the
EFA user guide requires; every EFA interface carries it. Slurm uses many ports
(slurmctld, slurmd, srun's ephemeral ports, PMIx), so nodes of one cluster
trust each other fully through the `nodes` group, as ParallelCluster does.
"""

from __future__ import annotations

from dataclasses import dataclass

from constructs import Construct

from gpucluster.constructs_lib.cfn import Resource, resource

LUSTRE_PORTS = ((988, 988), (1018, 1023))
NFS_PORT = 2049
# What ec2.SecurityGroup writes for allowAllOutbound=false: a rule that matches no packet, so
# CloudFormation adds no allow-all egress.
NO_EGRESS: dict[str, str | int] = {
    "CidrIp": "255.255.255.255/32",
    "Description": "Disallow all traffic",
    "FromPort": 252,
    "IpProtocol": "icmp",
    "ToPort": 86,
}


@dataclass(frozen=True)
class ClusterSecurityGroupsProps:
    cluster: str
    vpc_id: str
    # FSx for Lustre with EFA: its servers and the nodes exchange all traffic.
    efa_lustre: bool = False
    # The accounting database's port: a group for the database that admits the head's group
    # alone on it; None: no database.
    database_port: int | None = None
    # The REST API's port on the head (None: off) and who may reach it besides the cluster's
    # nodes, which reach every port of each other already: the head's group admits exactly these.
    rest_api_port: int | None = None
    rest_api_cidrs: tuple[str, ...] = ()
    rest_api_security_groups: tuple[str, ...] = ()


class ClusterSecurityGroups(Construct):
    nodes: Resource
    efa: Resource
    storage: Resource
    head: Resource
    database: Resource | None

    def __init__(self, scope: Construct, id: str, props: ClusterSecurityGroupsProps) -> None:
        super().__init__(scope, id)
        name = props.cluster
        all_out: list[dict[str, str | int]] = [
            {"CidrIp": "0.0.0.0/0", "Description": "Package mirrors, AWS APIs, S3", "IpProtocol": "-1"}
        ]

        def group(id: str, what: str, egress: list[dict[str, str | int]] | None) -> Resource:
            properties: dict[str, object] = {
                "GroupDescription": f"gpucluster {name}: {what}",
                "VpcId": props.vpc_id,
            }
            if egress is not None:
                properties["SecurityGroupEgress"] = egress
            return resource(self, id, "AWS::EC2::SecurityGroup", properties)

        self.nodes = group("Nodes", "head, login and compute nodes", all_out)
        self._all_traffic(
            "NodesFromNodes", self.nodes, self.nodes, "Slurm, srun, PMIx and MPI between cluster nodes"
        )
        self.efa = group("Efa", "EFA, all traffic to and from itself", None)
        self._all_traffic("EfaIn", self.efa, self.efa, "EFA requires all inbound traffic from its own group")
        resource(
            self,
            "EfaOut",
            "AWS::EC2::SecurityGroupEgress",
            {
                "Description": "EFA requires all outbound traffic to its own group",
                "DestinationSecurityGroupId": self.efa.att("GroupId"),
                "GroupId": self.efa.att("GroupId"),
                "IpProtocol": "-1",
            },
        )
        self.storage = group("Storage", "FSx for Lustre and EFS", all_out)
        # (logical id, source group, protocol, from port, to port, description); no ports for "-1".
        ingress: list[tuple[str, Resource, str, int | None, int | None, str]] = [
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
        if props.efa_lustre:
            ingress += [
                ("StorageEfaFromNodes", self.nodes, "-1", None, None, "EFA-enabled Lustre from nodes"),
                ("StorageEfaSelf", self.storage, "-1", None, None, "EFA-enabled Lustre between servers"),
            ]
        for logical, source, protocol, low, high, why in ingress:
            self._ingress(logical, self.storage, source, protocol, why, low, high)
        if props.efa_lustre:
            # EFA traffic is not tracked like TCP: the file servers open flows to
            # clients too, so the clients' group must admit them explicitly.
            self._all_traffic(
                "NodesFromEfaLustre", self.nodes, self.storage, "EFA-enabled Lustre servers to clients"
            )

        # The head's own group, on every cluster: rules that admit the head alone name it. Were it
        # added with the first such rule, the head instance's SecurityGroupIds would change, which
        # the EC2 instance schema lists among the properties that may replace it; this way turning
        # accounting on (or opening a port on the head) changes rules only. Its logical id is
        # pinned in the network stack. Its description is create-only: it keeps the words it was
        # first deployed with (with accounting), so a cluster deployed then keeps its group.
        self.head = group("Head", "head node, the only client of the accounting database", None)
        self.database = None
        if props.rest_api_port is not None:
            self._rest_api_ingress(self.head, props.rest_api_port, props)
        if props.database_port is not None:
            # No egress: a database never opens connections (the rule below matches nothing).
            self.database = group(
                "Database", "Slurm accounting database, from the head node only", [NO_EGRESS]
            )
            self._ingress(
                "DatabaseFromHead",
                self.database,
                self.head,
                "tcp",
                "MariaDB from slurmdbd on the head node",
                props.database_port,
                props.database_port,
            )

    def _rest_api_ingress(self, head: Resource, port: int, props: ClusterSecurityGroupsProps) -> None:
        """slurmrestd's port from each listed range and group, and from nothing else. Each rule's
        id comes from what it admits, so adding or removing one leaves the others in place."""
        rule = {"FromPort": port, "GroupId": head.att("GroupId"), "IpProtocol": "tcp", "ToPort": port}
        for cidr in props.rest_api_cidrs:
            resource(
                self,
                "RestApiFrom" + cidr.replace(".", "-").replace("/", "-"),
                "AWS::EC2::SecurityGroupIngress",
                {**rule, "CidrIp": cidr, "Description": f"Slurm REST API (slurmrestd) from {cidr}"},
            )
        for group_id in props.rest_api_security_groups:
            resource(
                self,
                f"RestApiFrom-{group_id}",
                "AWS::EC2::SecurityGroupIngress",
                {
                    **rule,
                    "Description": f"Slurm REST API (slurmrestd) from members of {group_id}",
                    "SourceSecurityGroupId": group_id,
                },
            )

    def _all_traffic(self, id: str, into: Resource, source: Resource, why: str) -> None:
        """Admit every protocol and port into `into` from members of `source`."""
        self._ingress(id, into, source, "-1", why)

    def _ingress(
        self,
        id: str,
        into: Resource,
        source: Resource,
        protocol: str,
        why: str,
        low: int | None = None,
        high: int | None = None,
    ) -> None:
        properties: dict[str, object] = {
            "Description": why,
            "GroupId": into.att("GroupId"),
            "IpProtocol": protocol,
            "SourceSecurityGroupId": source.att("GroupId"),
        }
        if low is not None and high is not None:
            properties |= {"FromPort": low, "ToPort": high}
        resource(self, id, "AWS::EC2::SecurityGroupIngress", properties)
