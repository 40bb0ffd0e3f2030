"""Accounts and QOS on EKS: the controller pod runs the EC2 head's accounts agent on the EC2
path's accounts.json, so slurmdbd gets the same sacctmgr commands on both orchestrators."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gpucluster.agent_package import agent_tree
from gpucluster.agents.accounts import apply
from gpucluster.bootstrap.accounting import ACCOUNTS_STATE, accounts_file
from gpucluster.eks import accounts
from gpucluster.slurm.accounting import accounts_state
from tests.agents.test_accounts import FakeSacctmgr
from tests.conftest import REPO
from tests.eks.test_semantics import of_kind

WITH_ACCOUNTING = "example-mixed"

# sacctmgr as FakeSacctmgr({}) answers: gres/gpu registered, every other listing empty; each
# change is logged as a JSON line.
FAKE_SACCTMGR = f"""#!{sys.executable}
import json, os, sys
argv = sys.argv[1:]
if argv[:3] == ["-n", "-P", "show"]:
    print("gres|gpu" if argv[3] == "tres" else "", end="")
else:
    with open(os.environ["SACCTMGR_LOG"], "a") as log:
        log.write(json.dumps(argv[1:]) + "\\n")
"""


def _configmap(rendered):
    (configmap,) = [
        doc
        for doc in of_kind(rendered[WITH_ACCOUNTING], "ConfigMap")
        if doc["metadata"]["name"] == accounts.CONFIGMAP
    ]
    return configmap


def test_the_controller_pod_runs_the_agent_on_the_ec2_paths_files(rendered, clusters):
    (controller,) = of_kind(rendered[WITH_ACCOUNTING], "Controller")
    pod = controller["spec"]["template"]["spec"]
    (container,) = [c for c in pod["containers"] if c["name"] == accounts.CONTAINER]
    assert container["image"] == controller["spec"]["slurmctld"]["image"]
    # What the operator's own `reconfigure` container mounts to run scontrol (controller_app.go).
    for name, path in (("slurm-etc", "/etc/slurm"), ("slurm-authsocket", "/run/slurmctld")):
        assert {"name": name, "mountPath": path, "readOnly": True} in container["volumeMounts"]
    [volume] = [v for v in pod["volumes"] if v["name"] == accounts.CONFIGMAP]
    loop = container["command"][-1]
    assert loop.startswith(f"cd {accounts.MOUNT} && ")
    assert f"python3 -m gpucluster.agents.accounts {accounts.MOUNT}/{accounts.STATE_FILE}" in loop
    data = _configmap(rendered)["data"]
    assert data[accounts.STATE_FILE] == accounts_file(clusters[WITH_ACCOUNTING])[ACCOUNTS_STATE]
    # Every file of the agent's tree, the repository's own, back at its path in the volume.
    items = {item["key"]: item["path"] for item in volume["configMap"]["items"]}
    assert set(items) == set(data)
    tree = agent_tree(("gpucluster.agents.accounts",))
    assert {items[key]: text for key, text in data.items() if key != accounts.STATE_FILE} == tree
    for path, text in tree.items():
        assert text == (REPO / path).read_text()


def test_without_accounting_there_is_no_agent(rendered):
    (controller,) = of_kind(rendered["p5"], "Controller")
    names = [c["name"] for c in controller["spec"]["template"]["spec"].get("containers") or []]
    assert accounts.CONTAINER not in names
    assert accounts.CONFIGMAP not in [doc["metadata"]["name"] for doc in of_kind(rendered["p5"], "ConfigMap")]


def test_the_pods_agent_sends_the_ec2_paths_sacctmgr_commands(rendered, clusters, tmp_path):
    mount = tmp_path / "opt"
    (controller,) = of_kind(rendered[WITH_ACCOUNTING], "Controller")
    [volume] = [
        v for v in controller["spec"]["template"]["spec"]["volumes"] if v["name"] == accounts.CONFIGMAP
    ]
    data = _configmap(rendered)["data"]
    for item in volume["configMap"]["items"]:
        (mount / item["path"]).parent.mkdir(parents=True, exist_ok=True)
        (mount / item["path"]).write_text(data[item["key"]])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sacctmgr").write_text(FAKE_SACCTMGR)
    (bin_dir / "sacctmgr").chmod(0o755)
    log = tmp_path / "sacctmgr.log"
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",) and not k.startswith("GPUCLUSTER_")
    }
    env |= {"PATH": f"{bin_dir}:{env['PATH']}", "SACCTMGR_LOG": str(log), "PYTHONDONTWRITEBYTECODE": "1"}
    # The pod's command line in the volume, with only the ConfigMap's files and the standard
    # library (-S: no site-packages, as the image's bare python3 has no boto3 or gpucluster).
    argv = [sys.executable, "-S", "-m", "gpucluster.agents.accounts", str(mount / accounts.STATE_FILE)]
    result = subprocess.run(argv, env=env, cwd=mount, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    in_pod = [tuple(json.loads(line)) for line in log.read_text().splitlines()]
    ec2 = FakeSacctmgr({})
    apply(accounts_state(clusters[WITH_ACCOUNTING]), ec2)
    assert in_pod == ec2.changes
    assert any(change[:2] == ("add", "qos") for change in in_pod)
