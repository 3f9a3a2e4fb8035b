"""Package list for setuptools; everything else is in pyproject.toml.

The jinja2 templates live in the repository's top-level ``templates/`` folder (the
project layout keeps them there) and ship inside wheels as ``autobench/templates``.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["autobench", "autobench.*"]), "autobench.templates"],
    package_dir={"autobench.templates": "templates"},
)
