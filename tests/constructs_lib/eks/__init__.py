"""Tests of the EKS constructs (gpucluster.constructs_lib.eks), read from the synthesized EKS examples."""
