"""One module per stack; stacks only wire constructs together, from the resolved cluster's
values and the rendered node files."""
