"""The composition-function server Crossplane calls."""
