"""Build glue for the optional C extension (everything else is in pyproject.toml)."""

# agentic_bash.executors._fastspawn is the native launcher's compiled spawn and wait step; a
# machine without a C compiler or Python's headers still installs (optional=True) and runs
# the pure-Python path, which the isolation report names ("native spawns: pure Python").

from setuptools import Extension, setup

setup(ext_modules=[Extension("agentic_bash.executors._fastspawn",
                             sources=["agentic_bash/executors/_fastspawn.c"],
                             extra_compile_args=["-O2", "-Wall", "-Wno-parentheses"],
                             optional=True)])
