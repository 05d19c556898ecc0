"""Measuring a campaign: parameters and their validation (config.py); the campaign runner (runner.py:
entry points and sealing; plan.py, preflight.py, group.py, rounds.py); the journal behind --resume, one
measurement per host (hostlock.py), the measuring bar (progress.py)."""
