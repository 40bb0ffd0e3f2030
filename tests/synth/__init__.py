"""Tests of gpucluster.synth."""
