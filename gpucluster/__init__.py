"""gpucluster: one YAML file to a Slurm GPU training cluster on AWS."""

__version__ = "0.1.0"
