"""`gpucluster top`: the cluster's dashboard in the terminal, read from CloudWatch."""
