"""Tests of gpucluster.agents."""
