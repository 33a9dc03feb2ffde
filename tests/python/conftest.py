"""pytest setup: the module comes from the build folder (PYTHONPATH=build/python, set by
ctest), the CLI from FLASHSTEP_BIN (build/app/flashstep) for the bit-for-bit comparisons."""
import os
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # solutions.py


@pytest.fixture(scope="session")
def flashstep_bin():
    path = os.environ.get("FLASHSTEP_BIN")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("FLASHSTEP_BIN must name the built flashstep program (ctest sets it)")
    return path
