"""The analysis layer: campaigns selected, every estimate, ratio, pooling and comparison computed once.

``from osbench_analysis import analysis`` then ``analysis.analyze()``: the package forwards every
name it does not hold to ``pipeline.py`` (the straight line from sealed campaigns to one Analysis record)."""
from osbench_analysis.forwarding import forwarder

__getattr__ = forwarder(__name__, "pipeline")
