"""`gpucluster scan`: secrets in synthesized or rendered output."""
