"""`python -m gpucluster`: the same command as the `gpucluster` script."""

from gpucluster.cli import main

main()
