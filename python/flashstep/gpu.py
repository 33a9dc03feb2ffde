"""flashstep.gpu: the CUDA backend from Python.

Not wired to Python: a build without CUDA has no GPU backend at all, and a build with one runs
the GPU through the command line (`flashstep gpu run`, `flashstep verify`; docs/gpu.md).
Both functions raise RuntimeError saying which case this build is.
"""
from . import _core


def _unavailable(what):
    if not _core.has_cuda:
        raise RuntimeError(f"flashstep.gpu.{what}: this build has no GPU backend (built without CUDA); "
                           "build with nvcc on the PATH (./setup.sh) and use `flashstep gpu` / `flashstep verify`")
    raise RuntimeError(f"flashstep.gpu.{what}: not available from Python in this build; "
                       f"use `flashstep gpu run` / `flashstep verify` (docs/gpu.md)")


def run(*args, **kwargs):
    """Runs a schedule's CUDA kernel. Raises RuntimeError (see the module's text)."""
    _unavailable("run")


def verify(*args, **kwargs):
    """Compares the GPU with the CPU trace after every j. Raises RuntimeError (see above)."""
    _unavailable("verify")
