"""ClusterDns: a private zone in the cluster's VPC where configless slurmd finds the
controller, by its A record and by the `_slurmctld._tcp` SRV record."""

from __future__ import annotations

import pytest

from gpucluster.constructs_lib.cluster_dns import ClusterDns, ClusterDnsProps
from tests.constructs_lib.small_stack import VPC_ID, Built, build, ref

HEAD_IP = "10.80.12.34"


@pytest.fixture(scope="module")
def dns(example_configs) -> Built[ClusterDns]:
    cfg = example_configs["default"]
    props = ClusterDnsProps(
        cluster="demo",
        region="us-east-2",
        zone_name="demo.gpucluster.internal",
        controller_host="slurmctld.demo.gpucluster.internal",
        slurmctld_port=6817,
        vpc_id=VPC_ID,
        head_node_private_ip=HEAD_IP,
    )
    return build(lambda stack: ClusterDns(stack, "Dns", props), cfg)


def test_the_zone_is_private_to_the_clusters_vpc(dns):
    zone = dns.only("AWS::Route53::HostedZone")
    assert zone["Name"] == "demo.gpucluster.internal"
    assert zone["VPCs"] == [{"VPCId": VPC_ID, "VPCRegion": "us-east-2"}]


def test_the_controller_is_found_by_name_and_by_srv_record(dns):
    records = {
        r["Properties"]["Type"]: r["Properties"] for r in dns.resources("AWS::Route53::RecordSet").values()
    }
    assert set(records) == {"A", "SRV"}
    for record in records.values():
        assert record["HostedZoneId"] == ref(dns, dns.construct.zone)
    assert records["A"]["Name"] == "slurmctld.demo.gpucluster.internal."
    assert records["A"]["ResourceRecords"] == [HEAD_IP]
    # What slurmd looks up without --conf-server: priority, weight, slurmctld's port, host.
    assert records["SRV"]["Name"] == "_slurmctld._tcp.demo.gpucluster.internal."
    assert records["SRV"]["ResourceRecords"] == ["0 0 6817 slurmctld.demo.gpucluster.internal."]
