"""distilld: keeps an Aura Distill knowledge store healthy."""

__version__ = "0.1.0"
