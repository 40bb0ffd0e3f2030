"""Tests of gpucluster.capacity."""
