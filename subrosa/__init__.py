"""subrosa: a durable, byte-budgeted memory for coding agents."""

__version__ = "0.1.0"
