"""Figures drawn from analysis tables, each a matplotlib Figure without pyplot's global state."""
