"""The infrastructure renderer: the CloudFormation stacks and the constructs they wire.

Stacks are built from a ResolvedCluster and the node files already rendered
(gpucluster.node_files); constructs take narrow typed props. Nothing here imports the
config or a node renderer (tests/test_import_rules.py).
"""
