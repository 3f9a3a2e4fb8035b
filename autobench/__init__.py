"""autobench: reproducible benchmarking of LLM serving recipes."""

__version__ = "0.1.0"
