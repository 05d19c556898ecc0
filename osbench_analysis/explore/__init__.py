"""Exploration: one question at a time over sealed campaigns, and the JupyterLab explorer (widgets.py).

``from osbench_analysis import explore`` then ``explore.samples(...)``: the package forwards every
name it does not hold to ``questions.py`` (the questions, each answered by one call)."""
from osbench_analysis.forwarding import forwarder

__getattr__ = forwarder(__name__, "questions")
