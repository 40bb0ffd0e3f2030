"""The cluster's VPC and its one subnet for nodes, created or imported.

EFA traffic and Capacity Blocks are single-AZ, so every node, file system and
mount target sits in one private subnet of `availability_zone`.

The VPC is what ec2.Vpc made of this layout (a public subnet with the NAT gateway, the
node subnet, an internet gateway, an S3 gateway endpoint, rejected traffic logged to a
retained group), written as CloudFormation at the same construct paths, so logical IDs,
tags and templates are unchanged; the L2 and its module cost a tenth of a synth.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import aws_cdk as cdk
from constructs import Construct

from gpucluster.constructs_lib.cfn import Resource, resource

ANYWHERE = "0.0.0.0/0"
FLOW_LOG_RETENTION_DAYS = 30
POLICY_VERSION = "2012-10-17"
SUBNET_NAME_TAG = "aws-cdk:subnet-name"
SUBNET_TYPE_TAG = "aws-cdk:subnet-type"
# The tag keys ec2.Vpc would have added (gpucluster.constructs_lib.cfn_tags orders keys ahead of use).
TAG_KEYS = ("Name", SUBNET_NAME_TAG, SUBNET_TYPE_TAG)


@dataclass(frozen=True)
class ClusterNetworkProps:
    availability_zone: str
    # Both set: use this VPC and subnet as they are, create nothing.
    existing_vpc_id: str | None
    existing_subnet_id: str | None
    # The VPC to create and its public (NAT gateway) and node subnets.
    cidr: ipaddress.IPv4Network
    public_subnet: ipaddress.IPv4Network
    node_subnet: ipaddress.IPv4Network
    # (block, zone) of each subnet the accounting database's subnet group takes; () for none.
    database_subnets: tuple[tuple[ipaddress.IPv4Network, str], ...] = ()


@dataclass(frozen=True)
class _Subnet:
    scope: Construct
    named: dict[str, str]
    subnet: Resource
    route_table: Resource
    association: Resource


class ClusterNetwork(Construct):
    vpc_id: str
    subnet_id: str
    created_subnet: Resource | None
    # The created database subnets (isolated: no route leaves the VPC), in props' order.
    database_subnets: tuple[Resource, ...]

    def __init__(self, scope: Construct, id: str, props: ClusterNetworkProps) -> None:
        super().__init__(scope, id)
        if props.existing_vpc_id is not None and props.existing_subnet_id is not None:
            self.vpc_id = props.existing_vpc_id
            self.subnet_id = props.existing_subnet_id
            self.created_subnet = None
            self.database_subnets = ()
            return
        vpc_scope = Construct(self, "Vpc")
        vpc_path = vpc_scope.node.path
        # ec2.Vpc names everything in it by its path (Tags.of(vpc).add("Name", path)).
        named = {"Name": vpc_path}
        vpc = resource(
            vpc_scope,
            "Resource",
            "AWS::EC2::VPC",
            {
                "CidrBlock": str(props.cidr),
                "EnableDnsHostnames": True,
                "EnableDnsSupport": True,
                "InstanceTenancy": "default",
            },
            scoped_tags=named,
        )
        self.vpc_id = vpc.ref_token
        zone = props.availability_zone
        public = self._subnet(vpc_scope, vpc_path, "public", "Public", props.public_subnet, zone)
        nodes = self._subnet(vpc_scope, vpc_path, "nodes", "Private", props.node_subnet, zone)
        gateway = resource(vpc_scope, "IGW", "AWS::EC2::InternetGateway", {}, scoped_tags=named)
        attachment = resource(
            vpc_scope,
            "VPCGW",
            "AWS::EC2::VPCGatewayAttachment",
            {"InternetGatewayId": gateway.ref_token, "VpcId": self.vpc_id},
        )
        to_internet = self._default_route(public, {"GatewayId": gateway.ref_token})
        to_internet.node.add_dependency(attachment)
        address = resource(public.scope, "EIP", "AWS::EC2::EIP", {"Domain": "vpc"}, scoped_tags=public.named)
        nat = resource(
            public.scope,
            "NATGateway",
            "AWS::EC2::NatGateway",
            {"AllocationId": address.att("AllocationId"), "SubnetId": public.subnet.ref_token},
            scoped_tags=public.named,
        )
        # The NAT gateway waits for the public subnet to reach the internet.
        nat.node.add_dependency(to_internet, public.association)
        self._default_route(nodes, {"NatGatewayId": nat.ref_token})
        self._s3_endpoint(vpc_scope, [nodes.route_table, public.route_table], named)
        self._flow_log(vpc_scope, vpc)
        self.subnet_id = nodes.subnet.ref_token
        self.created_subnet = nodes.subnet
        self.database_subnets = tuple(
            self._subnet(vpc_scope, vpc_path, f"database{index}", "Isolated", cidr, subnet_zone).subnet
            for index, (cidr, subnet_zone) in enumerate(props.database_subnets, start=1)
        )

    def _subnet(
        self,
        vpc_scope: Construct,
        vpc_path: str,
        name: str,
        kind: str,
        cidr: ipaddress.IPv4Network,
        zone: str,
    ) -> _Subnet:
        scope = Construct(vpc_scope, f"{name}Subnet1")
        # ec2.Vpc names a subnet's resources by the subnet's path, and marks the subnet.
        named = {"Name": f"{vpc_path}/{name}Subnet1"}
        marks = {SUBNET_NAME_TAG: name, SUBNET_TYPE_TAG: kind}
        subnet = resource(
            scope,
            "Subnet",
            "AWS::EC2::Subnet",
            {
                "AvailabilityZone": zone,
                "CidrBlock": str(cidr),
                "MapPublicIpOnLaunch": kind == "Public",
                "VpcId": self.vpc_id,
            },
            scoped_tags=marks | named,
        )
        route_table = resource(
            scope, "RouteTable", "AWS::EC2::RouteTable", {"VpcId": self.vpc_id}, scoped_tags=named
        )
        association = resource(
            scope,
            "RouteTableAssociation",
            "AWS::EC2::SubnetRouteTableAssociation",
            {"RouteTableId": route_table.ref_token, "SubnetId": subnet.ref_token},
        )
        return _Subnet(scope, named, subnet, route_table, association)

    @staticmethod
    def _default_route(subnet: _Subnet, target: dict[str, str]) -> Resource:
        properties = {"DestinationCidrBlock": ANYWHERE, "RouteTableId": subnet.route_table.ref_token}
        return resource(subnet.scope, "DefaultRoute", "AWS::EC2::Route", properties | target)

    def _s3_endpoint(self, vpc_scope: Construct, route_tables: list[Resource], named: dict[str, str]) -> None:
        service = {"Fn::Join": ["", ["com.amazonaws.", {"Ref": "AWS::Region"}, ".s3"]]}
        resource(
            Construct(vpc_scope, "S3"),
            "Resource",
            "AWS::EC2::VPCEndpoint",
            {
                "RouteTableIds": [table.ref_token for table in route_tables],
                "ServiceName": service,
                "VpcEndpointType": "Gateway",
                "VpcId": self.vpc_id,
            },
            scoped_tags=named,
        )

    def _flow_log(self, vpc_scope: Construct, vpc: Resource) -> None:
        """Rejected traffic into a retained group, through the role VPC Flow Logs assume."""
        group = resource(
            Construct(self, "FlowLogs"),
            "Resource",
            "AWS::Logs::LogGroup",
            {"RetentionInDays": FLOW_LOG_RETENTION_DAYS},
        )
        group.apply_removal_policy(cdk.RemovalPolicy.RETAIN)
        flow_log = Construct(vpc_scope, "FlowLog")
        # ec2.FlowLog names itself and its role by its path.
        named = {"Name": flow_log.node.path}
        role_scope = Construct(flow_log, "IAMRole")
        assume = {
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {"Service": "vpc-flow-logs.amazonaws.com"},
        }
        role = resource(
            role_scope,
            "Resource",
            "AWS::IAM::Role",
            {"AssumeRolePolicyDocument": {"Statement": [assume], "Version": POLICY_VERSION}},
            scoped_tags=named,
        )
        write_logs = {
            "Action": ["logs:CreateLogStream", "logs:DescribeLogStreams", "logs:PutLogEvents"],
            "Effect": "Allow",
            "Resource": group.att("Arn"),
        }
        policy = resource(
            Construct(role_scope, "DefaultPolicy"),
            "Resource",
            "AWS::IAM::Policy",
            {
                "PolicyDocument": {"Statement": [write_logs], "Version": POLICY_VERSION},
                "PolicyName": "",  # its own logical ID, as iam.Policy names it; set below
                "Roles": [role.ref_token],
            },
        )
        policy.add_property_override("PolicyName", policy.logical_id)
        resource(
            flow_log,
            "FlowLog",
            "AWS::EC2::FlowLog",
            {
                "DeliverLogsPermissionArn": role.att("Arn"),
                "LogDestinationType": "cloud-watch-logs",
                "LogGroupName": group.ref_token,
                "ResourceId": vpc.ref_token,
                "ResourceType": "VPC",
                "TrafficType": "REJECT",
            },
            scoped_tags=named,
        )
