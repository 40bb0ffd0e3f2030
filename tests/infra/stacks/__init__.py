"""Tests of gpucluster.infra.stacks."""
