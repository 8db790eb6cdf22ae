"""A test file's heavy import: a failure where requirements.lock applies, a skip elsewhere.

``pytest.importorskip`` at the top of a file skips all of it in silence. On Linux x86-64 `make`
installs every package of requirements.lock, so a missing one is a broken set-up: the file fails
to load. Elsewhere a package may have no wheel for the platform (TensorFlow, Apache Beam): the
file is skipped, and the reason names the wheel that requirements.txt asks for here.
"""

import importlib
import platform
import sys
from pathlib import Path
from types import ModuleType

import pytest
from packaging.requirements import Requirement

REQUIREMENTS = Path(__file__).resolve().parents[1] / "requirements.txt"
# Where the Makefile installs requirements.lock (its `uname -sm` test).
LOCKED = sys.platform == "linux" and platform.machine() == "x86_64"


def wheel_for(module: str) -> str:
    """The requirements.txt pin that installs ``module`` on this platform: tensorflow-cpu~=2.21.0."""
    for line in REQUIREMENTS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        name = req.name.lower().replace("-", "_").removesuffix("_cpu")
        if name == module and (req.marker is None or req.marker.evaluate()):
            return f"{req.name}{req.specifier}"
    return module


def require(module: str, locked: bool = LOCKED) -> ModuleType:
    """Import ``module`` at the top of a test file; fail (``locked``) or skip if it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        missing = error  # reported below, outside the except block: one message, no chain
    wheel = wheel_for(module)
    if locked:
        pytest.fail(
            f"cannot import {module} ({missing}): requirements.lock installs {wheel} on "
            "Linux x86-64; run `make venv`",
            pytrace=False,
        )
    where = f"{platform.system()} {platform.machine()}, Python {platform.python_version()}"
    pytest.skip(f"no {wheel} wheel installed for {where} ({missing})", allow_module_level=True)
