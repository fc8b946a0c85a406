"""Builds sparsefac._core with SWIG against an existing libsparsefac.

The library is found, in this order, from
  SPARSEFAC_BUILD_DIR  a CMake build tree (libsparsefac.so there, headers from its source tree)
  SPARSEFAC_PREFIX     an install prefix (cmake --install build --prefix <dir>)
  pkg-config sparsefac
and the extension gets an rpath to the library's directory, so no LD_LIBRARY_PATH is needed.
SWIG (>= 4.0) runs from $SWIG or the PATH.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
SWIG_DIR = os.path.join(HERE, os.pardir, "swig")
INTERFACE = os.path.join(SWIG_DIR, "sparsefac.i")


def fail(message):
    sys.exit(f"sparsefac setup: {message}")


def from_build_dir(build_dir):
    build_dir = os.path.abspath(build_dir)
    if not any(f.startswith("libsparsefac.so") for f in os.listdir(build_dir)):
        fail(f"SPARSEFAC_BUILD_DIR={build_dir} holds no libsparsefac.so (build it first)")
    source = os.path.join(HERE, os.pardir, os.pardir)
    cache = os.path.join(build_dir, "CMakeCache.txt")
    if os.path.exists(cache):
        with open(cache) as f:
            m = re.search(r"^sparsefac_SOURCE_DIR:STATIC=(.*)$", f.read(), re.M)
        if m:
            source = m.group(1)
    return [os.path.join(source, "include")], build_dir


def from_prefix(prefix):
    prefix = os.path.abspath(prefix)
    for libdir in ("lib", "lib64", os.path.join("lib", "x86_64-linux-gnu")):
        path = os.path.join(prefix, libdir)
        if os.path.isdir(path) and any(f.startswith("libsparsefac.so") for f in os.listdir(path)):
            return [os.path.join(prefix, "include")], path
    fail(f"SPARSEFAC_PREFIX={prefix} has no lib/libsparsefac.so")


def from_pkg_config():
    try:
        cflags = subprocess.check_output(["pkg-config", "--cflags-only-I", "sparsefac"], text=True)
        libdir = subprocess.check_output(["pkg-config", "--variable=libdir", "sparsefac"],
                                         text=True).strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    includes = [flag[2:] for flag in shlex.split(cflags) if flag.startswith("-I")]
    return includes, libdir


def locate_library():
    if os.environ.get("SPARSEFAC_BUILD_DIR"):
        return from_build_dir(os.environ["SPARSEFAC_BUILD_DIR"])
    if os.environ.get("SPARSEFAC_PREFIX"):
        return from_prefix(os.environ["SPARSEFAC_PREFIX"])
    found = from_pkg_config()
    if found is None:
        fail("libsparsefac not found: set SPARSEFAC_BUILD_DIR (a CMake build tree), "
             "SPARSEFAC_PREFIX (an install prefix) or PKG_CONFIG_PATH (for sparsefac.pc)")
    return found


def header_version(includes):
    for inc in includes:
        header = os.path.join(inc, "sparsefac", "sparsefac.h")
        if os.path.exists(header):
            with open(header) as f:
                m = re.search(r'#define SFAC_VERSION_STRING "([^"]+)"', f.read())
            if m:
                return m.group(1)
    return "0.0.0"


class SwigBuildExt(build_ext):
    """Generates the wrapper into the build directory (never next to the .i files)."""

    def build_extension(self, ext):
        swig = os.environ.get("SWIG") or shutil.which("swig") or shutil.which("swig4.0")
        if swig is None:
            fail("swig (>= 4.0) not found: install it or set $SWIG")
        out_dir = os.path.join(os.path.abspath(self.build_temp), "swig")
        os.makedirs(out_dir, exist_ok=True)
        wrap = os.path.join(out_dir, "sparsefac_python_wrap.c")
        cmd = [swig, "-python", "-threads", "-interface", "_core", "-I" + SWIG_DIR]
        if sys.maxsize > 2**32 and os.name != "nt":
            cmd.append("-DSWIGWORDSIZE64")  # stdint.i: int64_t is long on LP64
        cmd += ["-I" + inc for inc in ext.include_dirs]
        cmd += ["-outdir", out_dir, "-o", wrap, INTERFACE]
        print(" ".join(cmd))
        subprocess.check_call(cmd)
        ext.sources = [wrap]
        super().build_extension(ext)


INCLUDES, LIBDIR = locate_library() if {"build_ext", "build", "install", "bdist_wheel",
                                        "develop", "editable_wheel"} & set(sys.argv) else ([], "")

setup(
    version=header_version(INCLUDES) if INCLUDES else "0.1.0",
    packages=["sparsefac"],
    ext_modules=[Extension(
        "sparsefac._core",
        sources=[os.path.relpath(INTERFACE, HERE)],  # replaced by the generated wrapper
        include_dirs=INCLUDES,
        library_dirs=[LIBDIR] if LIBDIR else [],
        runtime_library_dirs=[LIBDIR] if LIBDIR else [],
        libraries=["sparsefac"],
        extra_compile_args=["-Wno-unused-parameter"],
    )],
    cmdclass={"build_ext": SwigBuildExt},
    zip_safe=False,
)
