"""Permission guard (allow / deny / prompt) and Claude Code style permission rules."""
