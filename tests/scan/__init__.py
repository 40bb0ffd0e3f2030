"""Tests of gpucluster.scan."""
