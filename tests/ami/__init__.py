"""Tests of gpucluster.ami."""
