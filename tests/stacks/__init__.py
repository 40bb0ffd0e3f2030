"""Tests of gpucluster.stacks."""
