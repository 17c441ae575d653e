"""Composers: pure functions from observed state to desired state, one per kind."""
