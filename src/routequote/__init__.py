"""routequote: non-custodial route quotes for agents that move value across chains."""

__version__ = "0.1.0"
__all__ = ["__version__"]
