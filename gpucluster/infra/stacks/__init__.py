"""One module per stack; stacks only wire constructs together."""
