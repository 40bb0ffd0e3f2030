"""Tests of gpucluster.resolved."""
