"""The head node's run-time agents, run by systemd timers, and the EKS stack's functions.

The bootstrap copies every file of this directory but EKS_FUNCTION_MODULES verbatim into the
node's bundle (`/opt/gpucluster/bundle/agents/`) and systemd runs them as plain scripts with the
distribution's python3 and python3-boto3, so these modules import only the standard
library, boto3/botocore and each other, never the rest of gpucluster.

- capacity_controller: follows each Capacity Block's state and dates, sizes its Auto
  Scaling group and keeps a Slurm maintenance reservation before the block ends
  (its decision in block_decision, its AWS calls in capacity_aws).
- nodegroup_scaler: the same decision for Capacity Block node groups on EKS, where no head
  node runs: the EKS stack's scheduled Lambda function, packaged from the modules that
  nodegroup_settings.PACKAGE names (not run on the head node).
- node_cleanup: removes dynamic Slurm nodes whose EC2 instance is gone.
- node_repair: replaces compute nodes that gpucluster's checks drained (their reasons in
  health_reasons), bounded per hour (its decision in repair_decision, its record in
  repair_state, its Slurm reads in repair_slurm).
- topology_agent: places each node under its EC2 network switch in Slurm's tree topology
  and writes topology.conf (the tree itself in ec2_topology, pure).
"""

# What only the EKS stack's Lambda functions run (each packaged from its settings module's
# PACKAGE), and those settings modules: the EC2 bundle leaves these out, so changing one
# changes no EC2 node's user data.
# tests/agents/test_bundle.py checks no module the bundle ships imports one of them.
EKS_FUNCTION_MODULES = frozenset(
    {
        "accounting_secret.py",
        "accounting_secret_settings.py",
        "kube_api.py",
        "node_annotations.py",
        "nodegroup_scaler.py",
        "nodegroup_settings.py",
        "topology_writer.py",
        "topology_writer_settings.py",
    }
)
