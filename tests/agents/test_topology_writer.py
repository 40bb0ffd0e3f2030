"""The EKS topology writer (gpucluster/agents/topology_writer.py): each compute node's Slinky
annotation from EC2 (faked by botocore's Stubber: any call not queued fails), patched over
HTTPS into a local stand-in for the Kubernetes API (tests/agents/kube_fake.py), and the
function's package run on its own from a copy."""

from __future__ import annotations

import base64
import logging
import urllib.parse

import boto3
import pytest
from botocore.stub import Stubber

from gpucluster.agent_package import agent_tree, handler_module
from gpucluster.agents import kube_api
from gpucluster.agents import topology_writer as writer
from gpucluster.agents import topology_writer_settings as settings
from gpucluster.agents.ec2_topology import TOPOLOGY_NAME
from gpucluster.agents.node_annotations import ANNOTATION, COMPUTE_GROUP_LABEL
from tests.agent_scripts import run_in_package
from tests.agents.kube_fake import KubeFake, k8s_node, self_signed, serving
from tests.topology.shapes import P5, instance

CLUSTER = "p5eks"
REGION = "us-east-2"
FLAT = f"{TOPOLOGY_NAME}:ec2:flat"
# P5's instances 1 and 2 plug into leaf a1, 3 and 4 into b2.
LEAF_A = ":".join((TOPOLOGY_NAME, "ec2", *P5["Instances"][0]["NetworkNodes"]))
LEAF_B = ":".join((TOPOLOGY_NAME, "ec2", *P5["Instances"][2]["NetworkNodes"]))


def p5_node(number: int, annotation: str | None = None) -> dict:
    entry = P5["Instances"][number - 1]
    return k8s_node(f"ip-10-0-0-{number}", entry["InstanceId"], "p5.48xlarge", annotation=annotation)


def ec2_client():
    return boto3.client("ec2", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")


def topology(stub: Stubber, ids: list[str], entries: list[dict]) -> None:
    stub.add_response("describe_instance_topology", {"Instances": entries}, {"InstanceIds": ids})


def api_of(fake: KubeFake, bearer: str = "k8s-aws-v1.test") -> kube_api.KubeApi:
    return kube_api.KubeApi(fake.endpoint, bearer, kube_api.opener(kube_api.tls_context(fake.ca_data)))


def run(fake: KubeFake, stub_calls, tmp_path) -> tuple[int, int]:
    ec2 = ec2_client()
    stub = Stubber(ec2)
    stub_calls(stub)
    with serving(fake, tmp_path), stub:
        result = writer.run_once(ec2, api_of(fake))
    stub.assert_no_pending_responses()
    return result


def test_annotations_are_written_only_where_they_differ_and_system_nodes_are_untouched(tmp_path):
    fake = KubeFake(
        [
            p5_node(1, annotation=LEAF_A),  # already placed: no patch
            p5_node(2, annotation=FLAT),  # placed flat before EC2 described it: moved
            p5_node(3),
            k8s_node("ip-10-0-1-1", "i-0a1b2c3d4e5f00099", "g5.12xlarge", "small"),  # EC2 describes no g5
            k8s_node("ip-10-0-9-9", "i-0a1b2c3d4e5f00097", "m7i.xlarge", group=None),  # system node
        ]
    )
    ids = [e["InstanceId"] for e in P5["Instances"][:3]]
    patched = run(fake, lambda s: topology(s, ids, P5["Instances"][:3]), tmp_path)
    assert patched == (3, 0)
    assert fake.patches() == {
        "ip-10-0-0-2": {"metadata": {"annotations": {ANNOTATION: LEAF_A}}},
        "ip-10-0-0-3": {"metadata": {"annotations": {ANNOTATION: LEAF_B}}},
        "ip-10-0-1-1": {"metadata": {"annotations": {ANNOTATION: FLAT}}},
    }
    [listing] = [r for r in fake.requests if r.method == "GET"]
    assert listing.query["labelSelector"] == [COMPUTE_GROUP_LABEL]
    for request in fake.requests:
        assert request.headers["authorization"] == "Bearer k8s-aws-v1.test"
    for request in (r for r in fake.requests if r.method == "PATCH"):
        assert request.headers["content-type"] == "application/merge-patch+json"
    # A merge patch: the node's other annotations stay.
    assert fake.node("ip-10-0-0-3")["metadata"]["annotations"] == {"other": "kept", ANNOTATION: LEAF_B}


def test_a_second_run_patches_nothing(tmp_path):
    fake = KubeFake([p5_node(1), p5_node(3)])
    ids = [P5["Instances"][0]["InstanceId"], P5["Instances"][2]["InstanceId"]]
    entries = [P5["Instances"][0], P5["Instances"][2]]

    def twice(stub):
        topology(stub, ids, entries)
        topology(stub, ids, entries)

    ec2 = ec2_client()
    stub = Stubber(ec2)
    twice(stub)
    with serving(fake, tmp_path), stub:
        assert writer.run_once(ec2, api_of(fake)) == (2, 0)
        assert writer.run_once(ec2, api_of(fake)) == (0, 0)
    assert len(fake.patches()) == 2


def test_a_described_type_ec2_has_not_placed_yet_is_flat_until_it_is(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="topology-writer")
    fake = KubeFake([p5_node(1)])
    instance_id = P5["Instances"][0]["InstanceId"]
    assert run(fake, lambda s: topology(s, [instance_id], []), tmp_path) == (1, 0)
    assert fake.node("ip-10-0-0-1")["metadata"]["annotations"][ANNOTATION] == FLAT
    assert "node ip-10-0-0-1: EC2 does not describe its instance yet; flat until it does" in caplog.text
    fake.requests.clear()
    assert run(fake, lambda s: topology(s, [instance_id], P5["Instances"][:1]), tmp_path) == (1, 0)
    assert fake.patches() == {"ip-10-0-0-1": {"metadata": {"annotations": {ANNOTATION: LEAF_A}}}}


def test_instance_topology_is_asked_100_ids_a_call_and_only_for_described_types(tmp_path):
    entries = [instance(n, "p5.48xlarge", ["nn-top", "nn-spine", f"nn-leaf{n // 64}"]) for n in range(1, 151)]
    nodes = [k8s_node(f"n{n}", e["InstanceId"], "p5.48xlarge") for n, e in enumerate(entries, start=1)]
    nodes.append(k8s_node("cpu1", "i-0a1b2c3d4e5f00999", "m7i.4xlarge", "cpu"))
    fake = KubeFake(nodes, page_size=40)
    ids = sorted(e["InstanceId"] for e in entries)

    def batches(stub):
        topology(stub, ids[:100], entries[:100])
        topology(stub, ids[100:], entries[100:])

    assert run(fake, batches, tmp_path) == (151, 0)
    # The API's pages were all read (151 nodes, 40 a page).
    assert len([r for r in fake.requests if r.method == "GET"]) == 4
    assert (
        fake.node("n150")["metadata"]["annotations"][ANNOTATION]
        == f"{TOPOLOGY_NAME}:ec2:nn-top:nn-spine:nn-leaf2"
    )
    assert fake.node("cpu1")["metadata"]["annotations"][ANNOTATION] == FLAT


def test_a_refused_patch_stops_no_other_node(tmp_path, caplog):
    fake = KubeFake([p5_node(1), p5_node(2), p5_node(3)], refuse={"ip-10-0-0-2"})
    ids = [e["InstanceId"] for e in P5["Instances"][:3]]
    assert run(fake, lambda s: topology(s, ids, P5["Instances"][:3]), tmp_path) == (2, 1)
    assert set(fake.patches()) == {"ip-10-0-0-1", "ip-10-0-0-2", "ip-10-0-0-3"}
    assert fake.node("ip-10-0-0-3")["metadata"]["annotations"][ANNOTATION] == LEAF_B
    assert "node ip-10-0-0-2 not placed at" in caplog.text and "HTTP 500" in caplog.text


def test_the_handler_fails_a_run_that_left_a_node_unplaced(tmp_path, monkeypatch):
    """So that it counts in the function's Errors metric; the other nodes were placed."""
    fake = KubeFake([p5_node(1), p5_node(2)], refuse={"ip-10-0-0-2"})
    ec2 = ec2_client()
    stub = Stubber(ec2)
    ids = [e["InstanceId"] for e in P5["Instances"][:2]]
    topology(stub, ids, P5["Instances"][:2])
    sts = boto3.client("sts", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    monkeypatch.setattr(writer.runtime, "client", lambda service, region: {"ec2": ec2, "sts": sts}[service])
    with serving(fake, tmp_path), stub:
        for key, value in {
            "GPUCLUSTER_CLUSTER": CLUSTER,
            kube_api.ENDPOINT_SETTING: fake.endpoint,
            kube_api.CA_SETTING: fake.ca_data,
            "AWS_REGION": REGION,
        }.items():
            monkeypatch.setenv(key, value)
        with pytest.raises(writer.RunFailed, match=r"1 compute node\(s\) not placed"):
            writer.handler({}, None)
    assert fake.node("ip-10-0-0-1")["metadata"]["annotations"][ANNOTATION] == LEAF_A


def test_the_handler_fails_when_the_api_cannot_be_reached(tmp_path, monkeypatch):
    fake = KubeFake([p5_node(1)])
    sts = boto3.client("sts", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    monkeypatch.setattr(
        writer.runtime, "client", lambda service, region: {"ec2": ec2_client(), "sts": sts}[service]
    )
    with serving(fake, tmp_path):
        endpoint = fake.endpoint
    for key, value in {
        "GPUCLUSTER_CLUSTER": CLUSTER,
        kube_api.ENDPOINT_SETTING: endpoint,
        kube_api.CA_SETTING: fake.ca_data,
        "AWS_REGION": REGION,
    }.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(writer.RunFailed, match="cannot list the compute nodes of p5eks, nothing patched"):
        writer.handler({}, None)


def test_a_node_that_cannot_be_read_is_counted_and_the_others_are_placed(tmp_path, caplog):
    bad = p5_node(2)
    bad["spec"]["providerID"] = "kind://docker/ip-10-0-0-2"
    fake = KubeFake([p5_node(1), bad])
    instance_id = P5["Instances"][0]["InstanceId"]
    assert run(fake, lambda s: topology(s, [instance_id], P5["Instances"][:1]), tmp_path) == (1, 1)
    assert "items[1].spec.providerID" in caplog.text


def test_ec2_refusing_the_call_patches_nothing(tmp_path):
    fake = KubeFake([p5_node(1)])
    with pytest.raises(writer.RunFailed, match="cannot read EC2's topology of 1 nodes, nothing patched"):
        run(
            fake,
            lambda s: s.add_client_error("describe_instance_topology", "UnauthorizedOperation"),
            tmp_path,
        )
    assert fake.patches() == {}


def test_a_server_whose_certificate_is_not_the_clusters_ca_is_refused(tmp_path):
    fake = KubeFake([p5_node(1)])
    (tmp_path / "other").mkdir()
    *_, wrong_ca = self_signed(tmp_path / "other")
    with serving(fake, tmp_path):
        api = kube_api.KubeApi(fake.endpoint, "t", kube_api.opener(kube_api.tls_context(wrong_ca)))
        with pytest.raises(kube_api.KubeApiError, match="CERTIFICATE_VERIFY_FAILED"):
            api.list_nodes(COMPUTE_GROUP_LABEL)
    assert fake.requests == []


def test_the_token_is_a_presigned_get_caller_identity_that_signs_the_cluster_header():
    sts = boto3.client("sts", region_name=REGION, aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="x")
    token = kube_api.token(sts, CLUSTER)
    assert token.startswith("k8s-aws-v1.")
    encoded = token.removeprefix("k8s-aws-v1.")
    assert "=" not in encoded and "+" not in encoded and "/" not in encoded
    url = urllib.parse.urlsplit(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode())
    query = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
    assert url.scheme == "https" and url.hostname == f"sts.{REGION}.amazonaws.com"
    assert query["Action"] == "GetCallerIdentity" and query["Version"] == "2011-06-15"
    assert query["X-Amz-Expires"] == "60"
    assert set(query["X-Amz-SignedHeaders"].split(";")) == {"host", "x-k8s-aws-id"}
    assert query["X-Amz-Credential"].startswith("AKIDEXAMPLE/")
    # The header is signed, not sent as a query parameter EKS would ignore.
    assert "x-k8s-aws-id" not in query


def test_the_package_is_what_the_handler_imports():
    # agent_tree fails on a module that imports anything but the standard library and the SDK.
    package = agent_tree((handler_module(settings.HANDLER),))
    assert settings.HANDLER == "gpucluster.agents.topology_writer.handler"
    assert "gpucluster/agents/topology_writer.py" in package


HANDLER_RUN = """
import boto3, logging
from gpucluster.agents import topology_writer, runtime
logging.basicConfig()  # Lambda's runtime gives the root logger its handler
from botocore.stub import Stubber
def client(service, region):
    made = boto3.client(service, region_name=region, aws_access_key_id="x", aws_secret_access_key="x")
    if service == "ec2":
        stub = Stubber(made)
        stub.add_response("describe_instance_topology", {"Instances": __ENTRIES__}, {"InstanceIds": __IDS__})
        stub.activate()
    return made
runtime.client = client
print(topology_writer.handler({}, None))
"""


def test_the_handler_runs_from_its_package_alone(tmp_path):
    fake = KubeFake([p5_node(1), p5_node(2, annotation=LEAF_A)])
    entries = P5["Instances"][:2]
    with serving(fake, tmp_path):
        ids = [e["InstanceId"] for e in entries]
        code = HANDLER_RUN.replace("__ENTRIES__", repr(entries)).replace("__IDS__", repr(ids))
        settings_env = {
            "GPUCLUSTER_CLUSTER": CLUSTER,
            kube_api.ENDPOINT_SETTING: fake.endpoint,
            kube_api.CA_SETTING: fake.ca_data,
            "AWS_REGION": REGION,
        }
        done = run_in_package(tmp_path, settings.HANDLER, code, settings_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{'patched': 1}"
    assert fake.patches() == {"ip-10-0-0-1": {"metadata": {"annotations": {ANNOTATION: LEAF_A}}}}
    [request, *_] = fake.requests
    assert request.headers["authorization"].startswith("Bearer k8s-aws-v1.")
