"""The head node's run-time agents, run by systemd timers, and the EKS stack's functions.

Each ships as the package tree of the modules it imports (gpucluster.agent_package): the
bootstrap bundle's `agents/` directory holds the nodes' (NodeLayout.agents_dir), where systemd
runs `python3 -m gpucluster.agents.<module>` with the distribution's python3 and
python3-boto3, and each EKS function's package holds its handler's. So these modules import
only the standard library, boto3/botocore and each other, never the rest of gpucluster.

- capacity_controller: follows each Capacity Block's state and dates, sizes its Auto
  Scaling group and keeps a Slurm maintenance reservation before the block ends
  (its decision in block_decision, its AWS calls in capacity_aws).
- nodegroup_scaler: the same decision for Capacity Block node groups on EKS, where no head
  node runs: the EKS stack's scheduled Lambda function (not run on the head node).
- node_cleanup: removes dynamic Slurm nodes whose EC2 instance is gone.
- node_repair: replaces compute nodes that gpucluster's checks drained (their reasons in
  health_reasons), bounded per hour (its decision in repair_decision, its record in
  repair_state, its Slurm reads in repair_slurm).
- topology_agent: places each node under its EC2 network switch in Slurm's tree topology
  and writes topology.conf (the tree itself in ec2_topology, pure).
"""
