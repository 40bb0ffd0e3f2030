"""The instance catalog and the EFA interface layout derived from it."""

from __future__ import annotations

import copy
import json

import pytest

from gpucluster.catalog import load_catalog
from gpucluster.efa import efa_count, efa_interface_layout
from tests.conftest import REPO

CATALOG = load_catalog()
RAW = {e["InstanceType"]: e for e in json.loads((REPO / "gpucluster/data/instance_catalog.json").read_text())}


@pytest.mark.parametrize("name", CATALOG.names())
def test_layout_follows_the_user_guide_rules(name):
    info = CATALOG.get(name)
    slots = efa_interface_layout(info)
    card0 = info.network_cards[0]
    primary = slots[0]
    assert (primary.network_card_index, primary.device_index) == (0, 0)
    if card0.supports_efa and card0.max_interfaces < 2:
        assert primary.interface_type == "efa"
    else:
        assert primary.interface_type == "interface", "an efa-only interface can never be primary"
    on_card0 = [s for s in slots if s.network_card_index == 0]
    if card0.supports_efa and card0.max_interfaces >= 2:
        assert on_card0[1:] == [(0, 1, "efa-only")]
    else:
        assert len(on_card0) == 1
    others = [s for s in slots if s.network_card_index != 0]
    efa_cards = [c.index for c in info.network_cards[1:] if c.supports_efa]
    assert others == [(index, 0, "efa-only") for index in efa_cards]
    assert efa_count(info) == info.max_efa_interfaces
    assert len({(s.network_card_index, s.device_index) for s in slots}) == len(slots)
    for slot in slots:
        assert slot.device_index < info.network_cards[slot.network_card_index].max_interfaces


@pytest.mark.parametrize(
    "name, cards, efa, first_efa_card",
    [
        ("p4d.24xlarge", 4, 4, 0),
        ("p5.48xlarge", 32, 32, 0),
        ("p5en.48xlarge", 16, 16, 0),
        ("p6-b200.48xlarge", 8, 8, 0),
        ("p6-b300.48xlarge", 17, 16, 1),
        ("g6e.48xlarge", 4, 4, 0),
        ("p5.4xlarge", 1, 1, 0),
    ],
)
def test_known_layouts(name, cards, efa, first_efa_card):
    info = CATALOG.get(name)
    assert len(info.network_cards) == cards
    assert efa_count(info) == efa
    efa_slots = [s for s in efa_interface_layout(info) if s.interface_type != "interface"]
    assert efa_slots[0].network_card_index == first_efa_card


def test_catalog_keeps_describe_instance_types_shape():
    for name, entry in RAW.items():
        assert entry["InstanceType"] == name
        network = entry["NetworkInfo"]
        assert network["EfaSupported"] is True
        assert {c["NetworkCardIndex"] for c in network["NetworkCards"]} == set(
            range(network["MaximumNetworkCards"])
        )
        efa_cards = [c for c in network["NetworkCards"] if "efa-only" in c["InterfaceTypes"]]
        assert len(efa_cards) == network["EfaInfo"]["MaximumEfaInterfaces"]


def test_catalog_covers_what_trainers_rent():
    for family in ("p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300", "g5", "g6", "g6e"):
        assert any(name.split(".")[0] == family for name in CATALOG.names()), family
    assert "p5.4xlarge" in CATALOG


def test_gpu_facts():
    p5 = CATALOG.get("p5.48xlarge")
    assert (p5.gpu_count, p5.gpu_model, p5.gpu_memory_mib, p5.vcpus) == (8, "H100", 81920, 192)
    assert p5.nvme_disks == 8 and p5.capacity_block_supported
    assert CATALOG.get("p6-b200.48xlarge").gpu_model == "B200"
    assert not CATALOG.get("g6e.48xlarge").capacity_block_supported


def test_generator_reproduces_the_committed_catalog(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "catalog.json"
    subprocess.run(
        [sys.executable, str(REPO / "scripts/build_catalog.py"), "--source", "moto", "--out", str(out)],
        check=True,
        capture_output=True,
    )
    assert json.loads(out.read_text()) == list(RAW.values())


def test_generator_reads_a_live_account_through_describe_instance_types(monkeypatch):
    """The --source aws path, with botocore's Stubber standing in for EC2."""
    import importlib.util

    import boto3
    from botocore.stub import Stubber

    spec = importlib.util.spec_from_file_location("build_catalog", REPO / "scripts/build_catalog.py")
    build_catalog = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_catalog)

    client = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    stubber = Stubber(client)
    page = [copy.deepcopy(RAW[name]) for name in build_catalog.CATALOG_TYPES]
    for entry in page:
        for card in entry["NetworkInfo"]["NetworkCards"]:
            card.pop("InterfaceTypes", None)
        entry.pop("CapacityBlockSupported", None)
        entry.pop("NvSwitch", None)
    stubber.add_response(
        "describe_instance_types",
        {"InstanceTypes": page},
        {"InstanceTypes": list(build_catalog.CATALOG_TYPES)},
    )
    monkeypatch.setattr(boto3, "client", lambda *args, **kwargs: client)
    with stubber:
        source = build_catalog._from_aws("us-east-2")
    stubber.assert_no_pending_responses()
    rebuilt = build_catalog.build(source)
    assert rebuilt == json.loads((REPO / "gpucluster/data/instance_catalog.json").read_text())


# NVSwitch HGX boards (AWS ParallelCluster's cookbook starts Fabric Manager on P4, P5 and P6).
NVSWITCH_TYPES = {
    "p4d.24xlarge",
    "p4de.24xlarge",
    "p5.48xlarge",
    "p5e.48xlarge",
    "p5en.48xlarge",
    "p6-b200.48xlarge",
    "p6-b300.48xlarge",
}


@pytest.mark.parametrize("name", CATALOG.names())
def test_nvswitch_fact(name):
    info = CATALOG.get(name)
    assert info.nvswitch == (name in NVSWITCH_TYPES)
    if info.family.startswith("g"):
        assert not info.nvswitch


def test_verified_topology_must_match_what_ec2_reports(monkeypatch):
    """cpu_topology.VERIFIED is hand-written from public records; the catalog refuses an entry
    whose core, thread or GPU count disagrees with DescribeInstanceTypes."""
    from gpucluster import catalog as catalog_module
    from gpucluster.cpu_topology import CpuLayout, GpuSockets

    wrong = GpuSockets(
        layout=CpuLayout(sockets=2, cores_per_socket=24, threads_per_core=2), gpu_socket=(0,) * 8
    )
    monkeypatch.setitem(catalog_module.VERIFIED, "p5.48xlarge", wrong)
    with pytest.raises(
        ValueError, match=r"VERIFIED\[p5.48xlarge\] has .* \(48, 2, 8\), the catalog \(96, 2, 8\)"
    ):
        catalog_module._parse(RAW["p5.48xlarge"])


def test_verified_layouts_agree_with_the_catalog():
    for name in CATALOG.names():
        instance = CATALOG.get(name)
        if instance.gpu_sockets is not None:
            assert instance.gpu_sockets.layout.cores == instance.cores
            assert (
                instance.gpu_sockets.layout.cores * instance.gpu_sockets.layout.threads_per_core
                == instance.vcpus
            )
            assert len(instance.gpu_sockets.gpu_socket) == instance.gpu_count
