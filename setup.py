"""Builds torch_axon._C with CMake (see CMakeLists.txt) inside setuptools.

Use `pip install --no-build-isolation -e .` so the build sees the installed
torch==2.13.0 instead of downloading another one. The CMake build directory
is build/ at the repository root and is reused between builds (with ccache
when available), so rebuilding after a small change is quick.
"""

import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name: str):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        build_dir = ROOT / "build"
        build_dir.mkdir(exist_ok=True)
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir), "-G", "Ninja",
            f"-DPython3_EXECUTABLE={sys.executable}",
            "-DCMAKE_BUILD_TYPE=Release",
        ]
        subprocess.run(configure, check=True)
        jobs = os.environ.get("AXON_BUILD_JOBS", str(os.cpu_count() or 2))
        subprocess.run(["cmake", "--build", str(build_dir), "-j", jobs,
                        "--target", "axon_python_extension", "axon_driver_pjrt"], check=True)
        destination = pathlib.Path(self.get_ext_fullpath(ext.name))
        destination.parent.mkdir(parents=True, exist_ok=True)
        install(next((build_dir / "csrc").glob("_C*.so")), destination)
        # The PJRT driver (AXON_DRIVER=pjrt), which the loader looks for next to _C: in the build's package
        # (a wheel) and in the source tree (an editable install, where setuptools copies only _C there).
        for package in {destination.parent, ROOT / "torch_axon"}:
            install(build_dir / "runtime" / "libaxon_driver_pjrt.so", package / "libaxon_driver_pjrt.so")


def install(built: pathlib.Path, destination: pathlib.Path) -> None:
    # Copy then rename: overwriting a loaded library in place crashes the
    # processes that have it mapped (tests running during a rebuild).
    staging = destination.with_name(destination.name + ".tmp")
    shutil.copy2(built, staging)
    os.replace(staging, destination)


setup(ext_modules=[CMakeExtension("torch_axon._C")], cmdclass={"build_ext": CMakeBuild})
