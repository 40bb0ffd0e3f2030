"""Launching training on a compute group: the torchrun sbatch job rendered onto login nodes."""
