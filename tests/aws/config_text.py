"""A config as a person writes it: comments everywhere, its own key order, quotes, a flow map."""

COMMENTED_CONFIG = """\
# Team A's training cluster.   Keep this header.
compute_groups:   # the GPUs first: what we pay for
  - name: train          # partition name
    count: 2
    instance_type: p5.48xlarge
    capacity: {type: on-demand}   # bought in the console for now
    # dev boxes below
  - name: dev
    instance_type: g6e.48xlarge
    count: 1
    efa: false

name: "teama"        # quoted on purpose
availability_zone: us-east-2a
region: 'us-east-2'
image:
  # The DLAMI, resolved at deploy until pinned.
  ssm_parameter: /aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-24.04/latest/ami-id
tags: {team: a, cost-center: "42"}
# trailing comment
"""
