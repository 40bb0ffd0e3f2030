"""Tests of gpucluster.plan."""
