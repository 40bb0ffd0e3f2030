"""Tests of gpucluster.preflight."""
