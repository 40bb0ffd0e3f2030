"""`gpucluster preflight`: what `cdk deploy` would find out 40 minutes in, checked in seconds.

`account` checks credentials, the AZ, instance types, the AMI, the CDK bootstrap and
the network; `quotas` the On-Demand vCPU quotas; `reservations` each group's
reservation against the config. `run` prints the pass/fail table.
"""
