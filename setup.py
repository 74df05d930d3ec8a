"""Packaging glue that pyproject.toml cannot express: two top-level directories ship inside the package.

- templates/ as routedriver.templates (route.init's routes, the review rubric, behaviorci's init bundle);
- docs/ as routedriver.docs, so an install carries the documentation every --help points to
  (site-packages/routedriver/docs/*.md), not only a clone.
"""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["routedriver", "routedriver.*"]),
        "routedriver.templates",
        "routedriver.docs",
    ],
    package_dir={"routedriver.templates": "templates", "routedriver.docs": "docs"},
    package_data={"routedriver.docs": ["*.md"]},
)
