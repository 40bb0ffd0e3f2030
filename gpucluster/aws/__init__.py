"""Calls to AWS from the workstation verbs (capacity, ami, preflight), never from synth.

`clients` makes every boto3 client (region, retry mode, timeouts) in one place;
`errors` turns every botocore failure into one line that names the call and the fix.
"""
