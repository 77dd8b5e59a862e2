"""Builds hpipe._core with the project's CMake build (see pyproject.toml)."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = Path(self.build_temp).resolve() / "cmake"
        options = ["-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", f"-DPython3_EXECUTABLE={sys.executable}",
                   "-DHPIPE_PYTHON=ON", "-DHPIPE_BUILD_TESTS=OFF", "-DHPIPE_BUILD_BENCH=OFF", "-DHPIPE_BUILD_TOOLS=OFF"]
        options += os.environ.get("HPIPE_CMAKE_ARGS", "").split()
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), *options], check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "hpipe_python"], check=True)
        (built,) = (build / "python" / "hpipe").glob("_core.*")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


setup(
    version=re.search(r"project\(hpipe VERSION (\S+)", (ROOT / "CMakeLists.txt").read_text()).group(1),
    ext_modules=[Extension("hpipe._core", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build/pip"}},
)
