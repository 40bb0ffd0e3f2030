"""`gpucluster ami pin`: the AMI id and the kernel a config builds its nodes from, pinned."""
