"""What a node runs at boot: the bundle, user data, the boot budget and the files `render` writes."""
