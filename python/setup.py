"""Bundles the checkout's build/libloom.so (run `make` first) into the
package, so that an installed `loom` finds its C library without
LOOM_LIBRARY.  Everything else is in pyproject.toml.

It first checks the interpreter that runs it: the README's offline install
(`pip install --no-index --no-build-isolation ./python`) builds with the
interpreter's own packages, so that interpreter needs numpy (the package's
one dependency) and a `bdist_wheel` command (the `wheel` package, or
setuptools >= 70.1).  Debian's /usr/bin/python3 with python3-numpy and
python3-wheel has both; another python3 earlier on PATH (pyenv, conda) may
have neither, and pip then failed with "invalid command 'bdist_wheel'" or
"No matching distribution found for numpy".  LOOM_SKIP_PYTHON_CHECK=1
skips the check (e.g. to build a wheel for another machine)."""
import os
import shutil
import sys

from setuptools import setup

DEBIAN = "/usr/bin/python3"


def _missing():
    """What this interpreter lacks for the offline install, as phrases."""
    miss = []
    try:
        import numpy  # noqa: F401
    except ImportError:
        miss.append("numpy (Debian: python3-numpy)")
    try:
        import setuptools.command.bdist_wheel  # noqa: F401  (setuptools >= 70.1)
    except ImportError:
        try:
            import wheel.bdist_wheel  # noqa: F401
        except ImportError:
            miss.append("the 'wheel' package that pip needs to build the package (Debian: python3-wheel)")
    return miss


def _check_interpreter():
    if os.environ.get("LOOM_SKIP_PYTHON_CHECK") == "1":
        return
    miss = _missing()
    if not miss:
        return
    sys.exit("loom: the Python interpreter installing this package, %s (Python %s), lacks %s.\n"
             "Install with Debian's Python, which has them from apt:\n"
             "    sudo apt-get install python3-numpy python3-wheel python3-scipy\n"
             "    %s -m pip install --no-index --no-build-isolation ./python\n"
             "(inside a venv made by `%s -m venv --system-site-packages .venv`, or add "
             "--break-system-packages).\n"
             "Or give this interpreter the packages (`%s -m pip install numpy wheel`, which needs the network).\n"
             "LOOM_SKIP_PYTHON_CHECK=1 skips this check."
             % (sys.executable, sys.version.split()[0], " and ".join(miss), DEBIAN, DEBIAN, sys.executable))


_check_interpreter()
here = os.path.dirname(os.path.abspath(__file__))
built = os.path.join(here, "..", "build", "libloom.so")
if os.path.exists(built):
    shutil.copyfile(built, os.path.join(here, "loom", "libloom.so"))
setup()
