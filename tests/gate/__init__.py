"""Tests of gpucluster.gate."""
