"""The head's topology timer (gpucluster.agents.topology_agent) against a recorded scontrol
and EC2 through botocore's Stubber: which nodes it places where, which it leaves unplaced,
and the topology.conf it writes."""

from __future__ import annotations

from collections.abc import Sequence

import boto3
from botocore.stub import Stubber

from gpucluster.agents import topology_agent
from gpucluster.agents.scontrol import CommandResult
from gpucluster.slurm.site import SlurmSite
from tests.topology.shapes import P5

P5_NODES = [f"gpu-{entry['InstanceId']}" for entry in P5["Instances"]]
LEAF_A = "default:ec2:nn-1f2e3d4c5b6a7980a:nn-2a3b4c5d6e7f8091a:nn-3a0000000000000a1"


def _record(name: str, features: str, topology: str = "") -> str:
    line = f"NodeName={name} Arch=x86_64 AvailableFeatures={features} ActiveFeatures={features}"
    return line + (f" Topology={topology}" if topology else "") + " State=IDLE+DYNAMIC_NORM"


class Slurm:
    def __init__(self, records: list[str], fail: frozenset[str] = frozenset()):
        self.records = records
        self.fail = fail
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        self.calls.append(tuple(argv))
        if tuple(argv[:2]) == ("scontrol", "update") and argv[2].removeprefix("NodeName=") in self.fail:
            return CommandResult(tuple(argv), 1, "", "Invalid node topology")
        stdout = "\n".join(self.records) + "\n" if "show" in argv else ""
        return CommandResult(tuple(argv), 0, stdout, "")

    @property
    def updates(self) -> dict[str, str]:
        return {
            call[2].removeprefix("NodeName="): call[3].removeprefix("Topology=")
            for call in self.calls
            if call[1] == "update"
        }


def _ec2(pages: list[dict], ids: list[str]):
    ec2 = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(ec2)
    for page in pages:
        stub.add_response(
            "describe_instance_topology",
            page,
            {"InstanceIds": ids, **({"NextToken": "t"} if page is not pages[0] else {})},
        )
    return ec2, stub


def test_places_new_nodes_flat_types_and_leaves_undescribed_ones_unplaced(tmp_path):
    records = [_record(name, "gpu,p5.48xlarge") for name in P5_NODES[:3]]
    # Already where it belongs: no update.
    records.append(
        _record(
            P5_NODES[3],
            "gpu,p5.48xlarge",
            "default:ec2:nn-1f2e3d4c5b6a7980a:nn-2a3b4c5d6e7f8091a:nn-3a0000000000000b2",
        )
    )
    records.append(_record("cpu-i-0a1b2c3d4e5f00050", "cpu,m7i.4xlarge"))  # EC2 describes no m7i
    records.append(_record("gpu-i-0a1b2c3d4e5f00060", "gpu,p5.48xlarge"))  # launched, not described yet
    records.append(_record("gpu-block-anchor", "gpu"))  # not an instance node
    records.append(_record("gpu-i-0a1b2c3d4e5f00070", "gpu"))  # no type feature: left alone
    slurm = Slurm(records)
    ids = sorted([entry["InstanceId"] for entry in P5["Instances"]] + ["i-0a1b2c3d4e5f00060"])
    # Two pages: the agent follows NextToken.
    first = {"Instances": P5["Instances"][:2], "NextToken": "t"}
    ec2, stub = _ec2([first, {"Instances": P5["Instances"][2:]}], ids)
    conf = tmp_path / "topology.conf"
    with stub:
        assert topology_agent.run_once(ec2, slurm, conf) == 0
    stub.assert_no_pending_responses()
    assert slurm.updates == {
        P5_NODES[0]: LEAF_A,
        P5_NODES[1]: LEAF_A,
        P5_NODES[2]: LEAF_A.replace("a1", "b2"),
        "cpu-i-0a1b2c3d4e5f00050": "default:ec2:flat",
    }
    text = conf.read_text()
    assert "SwitchName=flat Nodes=cpu-i-0a1b2c3d4e5f00050\n" in text
    assert f"SwitchName=nn-3a0000000000000a1 Nodes={P5_NODES[0]},{P5_NODES[1]}\n" in text
    assert "gpu-i-0a1b2c3d4e5f00060" not in text

    # A second run with nothing new changes nothing.
    placed = [
        _record(name, "gpu,p5.48xlarge", unit)
        for name, unit in slurm.updates.items()
        if name.startswith("gpu")
    ]
    slurm2 = Slurm(
        [*placed, records[3], _record("cpu-i-0a1b2c3d4e5f00050", "cpu,m7i.4xlarge", "default:ec2:flat")]
    )
    ec2, stub = _ec2(
        [{"Instances": P5["Instances"]}], sorted(entry["InstanceId"] for entry in P5["Instances"])
    )
    mtime = conf.stat().st_mtime_ns
    with stub:
        assert topology_agent.run_once(ec2, slurm2, conf) == 0
    assert slurm2.updates == {}
    assert conf.stat().st_mtime_ns == mtime and conf.read_text() == text


def test_an_answer_that_is_not_a_tree_places_nothing(tmp_path):
    slurm = Slurm([_record(name, "gpu,p5.48xlarge") for name in P5_NODES[:2]])
    bad = [
        dict(P5["Instances"][0]),
        {**P5["Instances"][1], "NetworkNodes": ["nn-2a3b4c5d6e7f8091a", "nn-1f2e3d4c5b6a7980a", "x"]},
    ]
    ec2, stub = _ec2([{"Instances": bad}], sorted(e["InstanceId"] for e in P5["Instances"][:2]))
    conf = tmp_path / "topology.conf"
    with stub:
        assert topology_agent.run_once(ec2, slurm, conf) == 1
    assert slurm.updates == {} and not conf.exists()


def test_a_refused_update_fails_the_run_but_places_the_others(tmp_path):
    slurm = Slurm([_record(name, "gpu,p5.48xlarge") for name in P5_NODES], fail=frozenset({P5_NODES[0]}))
    ec2, stub = _ec2([{"Instances": P5["Instances"]}], sorted(e["InstanceId"] for e in P5["Instances"]))
    with stub:
        assert topology_agent.run_once(ec2, slurm, tmp_path / "topology.conf") == 1
    assert len(slurm.updates) == 4


def test_the_unit_may_write_where_slurmctld_reads_topology_conf():
    from gpucluster.agents.cluster_names import TOPOLOGY_CONF
    from gpucluster.bootstrap.bundle import head_agents
    from gpucluster.resolved import resolve
    from tests.bootstrap_runs import example

    assert f"{SlurmSite().config_dir}/topology.conf" == TOPOLOGY_CONF
    units = head_agents(resolve(example("default"))).installed
    service = units["/etc/systemd/system/gpucluster-topology.service"]
    assert f"ReadWritePaths={SlurmSite().config_dir}\n" in service
    assert "gpucluster-topology.timer" in head_agents(resolve(example("default"))).timers


def test_an_instance_ec2_refuses_does_not_keep_the_others_unplaced(tmp_path):
    """A node whose instance EC2 no longer knows (it waits for the stale-node cleanup) makes
    EC2 refuse the whole batch: the agent asks again one id at a time."""
    records = [_record(name, "gpu,p5.48xlarge") for name in P5_NODES[:2]]
    records.append(_record("gpu-i-0a1b2c3d4e5f00077", "gpu,p5.48xlarge"))
    slurm = Slurm(records)
    ids = sorted([e["InstanceId"] for e in P5["Instances"][:2]] + ["i-0a1b2c3d4e5f00077"])
    ec2 = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(ec2)
    gone = "InvalidInstanceID.NotFound"
    stub.add_client_error("describe_instance_topology", gone, expected_params={"InstanceIds": ids})
    for instance_id in ids:
        if instance_id.endswith("77"):
            stub.add_client_error(
                "describe_instance_topology", gone, expected_params={"InstanceIds": [instance_id]}
            )
        else:
            entry = next(e for e in P5["Instances"] if e["InstanceId"] == instance_id)
            stub.add_response(
                "describe_instance_topology", {"Instances": [entry]}, {"InstanceIds": [instance_id]}
            )
    with stub:
        assert topology_agent.run_once(ec2, slurm, tmp_path / "topology.conf") == 0
    stub.assert_no_pending_responses()
    assert slurm.updates == {P5_NODES[0]: LEAF_A, P5_NODES[1]: LEAF_A}


def test_other_ec2_errors_place_nothing(tmp_path):
    slurm = Slurm([_record(name, "gpu,p5.48xlarge") for name in P5_NODES[:2]])
    ec2 = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(ec2)
    stub.add_client_error("describe_instance_topology", "UnauthorizedOperation")
    with stub:
        assert topology_agent.run_once(ec2, slurm, tmp_path / "topology.conf") == 1
    assert slurm.updates == {}
