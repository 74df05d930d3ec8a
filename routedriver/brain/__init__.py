"""bhrain (bhrain.struct.v1): a small agentic loop with pluggable atoms, tools, toolboxes, guards and memory.

The parts, each replaceable:

- ``loop``         the loop itself: model → hooks → tools (concurrently) → results → memory → repeat
- ``atoms``        ``ChatModel`` factories: ``claude``, ``qwen``, ``scripted``, ``MODULE:OBJ``, entry points
- ``tools``        the built-in tools (read, write, edit, glob, grep, bash, websearch)
- ``toolbox``      named groups of tools, merged into one registry that can change at runtime
- ``permissions``  the permission guard (allow / deny / prompt) and Claude Code style rule files
- ``memory``       context managers: summarize-on-limit (default), truncate, custom, background
- ``skills``       act / ask / review prompts and the review's machine-readable counts
- ``runner``       assembles the parts from CLI flags or a config file and runs one task

Nothing here prints: logs go to the ``bhrain`` logger, which the CLI routes to stderr.
"""
