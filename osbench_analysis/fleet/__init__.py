"""Campaigns on many hosts over a mutually authenticated Dask fleet.

``from osbench_analysis import fleet`` then ``fleet.fleet_run(...)``: the package forwards every
name it does not hold to ``run.py`` (submitting one campaign per host and storing what comes back)."""
from osbench_analysis.forwarding import forwarder

__getattr__ = forwarder(__name__, "run")
