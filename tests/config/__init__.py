"""Tests of gpucluster.config."""
