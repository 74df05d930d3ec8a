"""routedriver: a git-native, file-first route driver for LLM coding robots, humans and CI."""

__version__ = "0.1.0"
