"""Tests of gpucluster.diff."""
