"""Tests of gpucluster.infra.constructs."""
