"""Tables of the docs generated from committed result files."""
