"""Tests of gpucluster.cli."""
