"""Tests of gpucluster.container."""
