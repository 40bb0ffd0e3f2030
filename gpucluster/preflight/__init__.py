"""`gpucluster preflight`: what `cdk deploy` would find out 40 minutes in, checked in seconds.

`account` checks credentials, the AZ, instance types, quotas, the AMI, the CDK
bootstrap and the network; `reservations` checks each group's reservation against
the config. `run` prints the pass/fail table.
"""
