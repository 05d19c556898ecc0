"""The machine a campaign ran on: the facts a process sees where it runs (facts.py) and the host's
facts gathered once before measuring (machine.py)."""
