"""Jinja2 templates shipped with routedriver (new routes, review prompts, behaviorci init)."""
