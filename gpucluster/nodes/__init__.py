"""`gpucluster nodes`: each compute node's Slurm state and reason, and what the head's
node_repair agent did, read from the head node through SSM Run Command."""
