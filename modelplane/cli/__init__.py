"""The `modelplane` command."""
