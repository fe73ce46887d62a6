"""Build script: everything is declared in pyproject.toml except the optional compiled kernels.

``numcodecs_ext.core._kernels`` (five C files, the limited C API only, no numpy headers) speeds up
the scale_offset + cast_value loops, transpose's tiled copy, zfp's check of the values and its
libzfp calls (one C call per chunk; libzfp itself is loaded at run time, not linked). It is
optional twice over: if it cannot be compiled (no C compiler), the install goes on without it,
and without it the same results come from the numpy kernels, only slower. ``numcodecs-ext info`` says which are in use.
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# No float contraction (a * b + c -> fma) and no value-changing float optimisations: the kernels
# must give the IEEE 754 result of each operation, bit for bit equal to numpy's.
# -fno-trapping-math changes no value (it is clang's default): it lets GCC compute both sides of
# a select, without which it vectorises none of the loops.
FLAGS = {
    "msvc": ["/O2", "/fp:precise"],
    "unix": ["-O3", "-ffp-contract=off", "-fno-fast-math", "-fno-trapping-math"],
}


class BuildExt(build_ext):
    def build_extensions(self) -> None:
        flags = FLAGS.get(self.compiler.compiler_type, FLAGS["unix"])
        for ext in self.extensions:
            ext.extra_compile_args = [*ext.extra_compile_args, *flags]
        super().build_extensions()


setup(
    ext_modules=[
        Extension(
            "numcodecs_ext.core._kernels",
            sources=["numcodecs_ext/core/_kernels.c", "numcodecs_ext/core/_permute.c",
                     "numcodecs_ext/core/_scan.c", "numcodecs_ext/core/_bitround.c",
                     "numcodecs_ext/core/_zfpcall.c"],
            optional=True,
        )
    ],
    cmdclass={"build_ext": BuildExt},
)
