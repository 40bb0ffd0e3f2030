"""Slurm's files for a cluster: slurm.conf and its partitions, gres.conf, the health check."""
