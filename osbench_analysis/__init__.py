"""osbench: measure operating-system primitives and compare kernel architectures."""
__version__ = "0.1.0"
