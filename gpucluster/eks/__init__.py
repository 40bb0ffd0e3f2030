"""The cluster on EKS: Slinky's slurm-operator runs the same Slurm on node groups of the same
compute groups. Plain Python like the rest of the package: no CDK import here."""
