"""Tests of gpucluster.constructs_lib."""
