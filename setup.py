"""Builds and installs the `loom` Python package from this checkout.

    pip install --no-build-isolation .

needs nothing from the network: Debian's setuptools and wheel, and what
`make deps` installs. The extension is built by the project's CMake, in
build/ (or $LOOM_BUILD_DIR), configured there first when it is not yet: a
checkout that ran `make test` rebuilds nothing but the module.
"""

import os
import re
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def release():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(Loom VERSION ([0-9.]+)", f.read()).group(1)


class CMakeBuild(build_ext):
    """Builds the target loom_python and takes the files the build tree's
    package holds besides the Python sources: the extension and the
    tokenizer's module it opens from its own folder."""

    def build_extension(self, ext):
        build = os.path.abspath(os.environ.get("LOOM_BUILD_DIR",
                                               os.path.join(ROOT, "build")))
        if not os.path.exists(os.path.join(build, "build.ninja")):
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-G",
                                   "Ninja", "-DCMAKE_BUILD_TYPE=Release"])
        subprocess.check_call(["cmake", "--build", build, "--target",
                               "loom_python"])
        built = os.path.join(build, "python", "loom")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(built, os.path.basename(target)), target)
        for name in os.listdir(built):
            if name.startswith("libloom_sentencepiece"):
                shutil.copy2(os.path.join(built, name),
                             os.path.join(os.path.dirname(target), name))


# setuptools' own scratch goes under the CMake build folder, not beside the
# sources.
SCRATCH = os.path.join("build", "setuptools")
os.makedirs(os.path.join(ROOT, SCRATCH), exist_ok=True)

setup(
    name="loom",
    version=release(),
    description="Loom: a compiler and runtime for Transformer models",
    packages=["loom"],
    package_dir={"loom": "python/loom"},
    package_data={"loom": ["*.pyi", "py.typed"]},
    ext_modules=[Extension("loom._loom", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    install_requires=["numpy"],
    zip_safe=False,
    options={"build": {"build_base": SCRATCH},
             "egg_info": {"egg_base": SCRATCH}},
)
