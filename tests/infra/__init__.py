"""Tests of gpucluster.infra."""
