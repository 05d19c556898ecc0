"""Sealed, immutable campaigns: the typed records and sample columns (records.py, schema.py), the
campaign folder and its catalog (campaigns.py), owners' private folders, synthetic campaigns."""
