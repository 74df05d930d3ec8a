"""Packaging glue that pyproject.toml cannot express: templates/ (top level) ships as routedriver.templates."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["routedriver", "routedriver.*"]), "routedriver.templates"],
    package_dir={"routedriver.templates": "templates"},
)
