"""The published studies as data (studies.py), the comparisons they state (claims.py), and the
checks that their numbers match their source texts (sourcecheck.py, docs.py)."""
