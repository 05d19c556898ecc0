"""The probe catalog: every probe, its unit, parameters and what it mirrors (registry.py), and the
family of primitives each belongs to, with its printable name (families.py)."""
