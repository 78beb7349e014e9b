"""Bundles the checkout's build/libloom.so (run `make` first) into the
package, so that an installed `loom` finds its C library without
LOOM_LIBRARY.  Everything else is in pyproject.toml."""
import os
import shutil

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
built = os.path.join(here, "..", "build", "libloom.so")
if os.path.exists(built):
    shutil.copyfile(built, os.path.join(here, "loom", "libloom.so"))
setup()
