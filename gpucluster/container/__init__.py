"""The training image: the Dockerfile recipe (NGC PyTorch + the EFA installer + the user's code)."""
