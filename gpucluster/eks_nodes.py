"""Facts about EKS nodes that sizing needs below the EKS stack: the system node group every
EKS cluster gets, and how many pod addresses the VPC CNI can give a node.

The VPC CNI gives every pod that is not on the host network an address of the node's subnet,
from secondary addresses of the interfaces it attaches on network card 0 (the only card it
uses by default). MAX_PODS is the EKS AMI's table (awslabs/amazon-eks-ami,
templates/shared/runtime/eni-max-pods.txt: "# of ENI * (# of IPv4 per ENI - 1) + 2", ENIs of
network card 0 only) for the catalog's types and the system type; the IPv4 addresses per
interface follow from it and the card's interface count.
"""

from __future__ import annotations

# The small on-demand node group that runs the cluster's own pods (CoreDNS, the Slinky
# operator, slurmctld, the login pods), so that no GPU node is needed to keep Slurm up.
SYSTEM_INSTANCE_TYPE = "m7i.xlarge"
SYSTEM_NODE_COUNT = 2
# m7i.xlarge's network interfaces (one network card; DescribeInstanceTypes): not a catalog type.
SYSTEM_INTERFACES = 4

MAX_PODS: dict[str, int] = {
    "m7i.xlarge": 58,
    "p4d.24xlarge": 737,
    "p4de.24xlarge": 737,
    "p5.4xlarge": 118,
    "p5.48xlarge": 100,
    "p5e.48xlarge": 100,
    "p5en.48xlarge": 198,
    "p6-b200.48xlarge": 198,
    "p6-b300.48xlarge": 198,
    "g5.8xlarge": 234,
    "g5.12xlarge": 737,
    "g5.16xlarge": 234,
    "g5.24xlarge": 737,
    "g5.48xlarge": 345,
    "g6.8xlarge": 234,
    "g6.12xlarge": 234,
    "g6.16xlarge": 737,
    "g6.24xlarge": 737,
    "g6.48xlarge": 737,
    "g6e.8xlarge": 234,
    "g6e.12xlarge": 292,
    "g6e.16xlarge": 737,
    "g6e.24xlarge": 492,
    "g6e.48xlarge": 492,
}
# The VPC CNI's default warm pool (WARM_ENI_TARGET=1): the interface a node's pods use and
# one spare, while its pods fit in one interface, as a GPU node's few pods do (slurmd and the
# daemonsets).
CNI_INTERFACES_PER_GPU_NODE = 2


def ipv4_per_interface(instance_type: str, card0_interfaces: int) -> int:
    """IPv4 addresses one interface of `instance_type` holds, from MAX_PODS."""
    return (MAX_PODS[instance_type] - 2) // card0_interfaces + 1


def cni_addresses(instance_type: str, card0_interfaces: int, interfaces: int) -> int:
    """Addresses the VPC CNI holds on a node beyond the node's own primary address, with
    `interfaces` of card 0 in use (all of them: the node's most)."""
    held = min(interfaces, card0_interfaces) * ipv4_per_interface(instance_type, card0_interfaces)
    return held - 1


def system_node_addresses() -> int:
    """One system node's addresses, counted with every interface full: it runs the cluster's
    pods (operator, webhooks, CoreDNS, slurmctld, login pods)."""
    return 1 + cni_addresses(SYSTEM_INSTANCE_TYPE, SYSTEM_INTERFACES, SYSTEM_INTERFACES)
