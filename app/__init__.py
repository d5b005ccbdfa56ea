"""Caveat: archive, parse, audit and cite LLM inference speed claims."""

__version__ = "0.1.0"
