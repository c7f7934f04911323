"""Builds torch_tk._C: the tk op schemas + CPU reference always; the Hopper (sm_90a) kernels
whenever a CUDA toolkit (nvcc) and a CUDA build of torch are present -- with or without a GPU;
on a ROCm build of torch, the CDNA3 (gfx942) HIP kernel instead (see backend_plan).

Install with:  python3 -m pip install --no-build-isolation -e .
"""
import os
import pathlib
import shutil
import sys

from setuptools import setup

try:
    import torch  # noqa: F401
except ImportError:
    sys.exit(
        "torch_tk: PyTorch is not installed. Install it first (python3 -m pip install torch), then build with "
        "'python3 -m pip install --no-build-isolation -e .' so the extension compiles against that torch."
    )


def _find_cuda_home():
    """The toolkit folder holding bin/nvcc and lib64/libcudart.so, or None.

    torch guesses CUDA_HOME from `which nvcc`; where nvcc is a wrapper script outside the toolkit
    that guess is wrong, so also read the path the wrapper executes, and try /usr/local/cuda.
    """
    def ok(d):
        return d and os.path.isfile(os.path.join(d, "bin", "nvcc")) and (
            os.path.exists(os.path.join(d, "lib64", "libcudart.so")) or os.path.exists(os.path.join(d, "lib", "libcudart.so")))

    cands = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        cands.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
        try:
            with open(nvcc, "rb") as f:
                head = f.read(4096).decode("utf-8", "replace")
            for tok in head.replace('"', " ").split():
                if tok.endswith("/bin/nvcc"):
                    cands.append(tok[: -len("/bin/nvcc")])
        except OSError:
            pass
    cands.append("/usr/local/cuda")
    return next((d for d in cands if ok(d)), None)


cuda_home = _find_cuda_home() if torch.version.cuda else None
if cuda_home:
    os.environ["CUDA_HOME"] = cuda_home  # before cpp_extension reads it at import time

from torch.utils import cpp_extension  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
csrc = os.path.join(here, "csrc")
sources = ["csrc/ops.cpp", "csrc/swiglu.cpp", "csrc/linear_backward.cpp", "csrc/rope.cpp", "csrc/counters.cpp",
           "csrc/autocast.cpp", "csrc/module.cpp"]


def _cxx_std():
    """The C++ standard the installed torch headers were written for: recent ATen refuses to
    compile below C++20; older torch (2.11 on the GPU machines) is built as C++17, and mixing
    standards there broke c10's error formatting (segfaults on messages with integers)."""
    aten = os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "ATen.h")
    try:
        needs20 = "C++20 or later" in open(aten).read()
    except OSError:
        needs20 = False
    return "-std=c++20" if needs20 else "-std=c++17"


def backend_plan(torch_cuda, torch_hip, cuda_home, rocm_home, env, cxx_std):
    """Which GPU backend the extension builds, from the installed torch and toolkits:

    - ROCm torch (torch.version.hip) + a ROCm toolkit: the CDNA3 HIP kernel (csrc/gemm/cdna3/*.hip,
      hipcc, --offload-arch from PYTORCH_ROCM_ARCH, default gfx942), registered under the CUDA
      dispatch key as ROCm torch expects; the Hopper sources are not built.
    - CUDA torch + nvcc: the Hopper sm_90a kernels.
    - otherwise the CPU reference only (said on stdout).
    Returns a dict: backend ("cdna3" | "hopper" | None), sources, define, device_flags, env (to
    set before building), message.
    """
    if torch_hip:
        if not rocm_home:
            return {"backend": None, "sources": [], "define": [], "device_flags": [], "env": {},
                    "message": "torch_tk: ROCm torch but no ROCm toolkit (hipcc) found: building the CPU reference only"}
        arch = env.get("PYTORCH_ROCM_ARCH") or "gfx942"
        return {"backend": "cdna3",
                "sources": ["csrc/gemm/cdna3/dispatch.cpp", "csrc/gemm/cdna3/launch.hip"],
                "define": [("TK_WITH_HIP", "1")],
                "device_flags": ["-O3", cxx_std],
                "env": {"PYTORCH_ROCM_ARCH": arch},
                "message": f"torch_tk: building the CDNA3 HIP kernels for {arch} with ROCM_HOME={rocm_home} "
                           "(compiled and ISA-checked in CI; never run on AMD hardware by this project)"}
    if torch_cuda and cuda_home:
        # The Hopper kernels need the arch-specific sm_90a target (wgmma, setmaxnreg). Any other
        # architectures asked for through TORCH_CUDA_ARCH_LIST are built too (the kernel body is
        # compiled only for sm_90a; elsewhere the launcher never runs it).
        arch = ["-gencode=arch=compute_90a,code=sm_90a"]
        if env.get("TORCH_CUDA_ARCH_LIST"):
            arch += [f for f in cpp_extension._get_cuda_arch_flags() if "compute_90a" not in f]
        srcs = ["csrc/gemm/hopper/dispatch.cpp", "csrc/gemm/hopper/launch.cu", "csrc/gemm/hopper/pad_copy.cu",
                "csrc/gemm/hopper/ticket_counter.cpp", "csrc/gemm/hopper/skinny.cu"]
        srcs += sorted(str(p) for p in pathlib.Path(here, "csrc/gemm/hopper").glob("launch_inst_*.cu"))
        return {"backend": "hopper", "sources": [os.path.relpath(p, here) for p in srcs],
                "define": [("TK_WITH_CUDA", "1")],
                "device_flags": ["-O3", cxx_std, "--expt-relaxed-constexpr", "-Xptxas=-v"] + arch, "env": {},
                "message": f"torch_tk: building the Hopper kernels with CUDA_HOME={cuda_home}"}
    return {"backend": None, "sources": [], "define": [], "device_flags": [], "env": {},
            "message": "torch_tk: no CUDA toolkit (nvcc) or CPU-only torch: building the CPU reference only"}


cxx_std = _cxx_std()
cxx = ["-O3", cxx_std]
plan = backend_plan(torch.version.cuda, getattr(torch.version, "hip", None), cuda_home,
                    getattr(cpp_extension, "ROCM_HOME", None), os.environ, cxx_std)
os.environ.update(plan["env"])
sources += plan["sources"]
define = plan["define"]
if plan["backend"] == "hopper" and os.environ.get("TK_EXPERIMENTS") == "1":
    define = define + [("TK_EXPERIMENTS", "1")]  # stage-removal hooks (benchmarks/ab_env.py)
if plan["backend"] == "hopper" and os.environ.get("TK_BUILD_DEFINES"):
    # NAME=VALUE[,NAME=VALUE...]: compile-time A/B variants (scripts/ab_build.sh), never the default
    define = define + [tuple(d.split("=", 1)) for d in os.environ["TK_BUILD_DEFINES"].split(",") if "=" in d]
ext_cls = cpp_extension.CUDAExtension if plan["backend"] else cpp_extension.CppExtension
nvcc_flags = plan["device_flags"]
print(plan["message"])

if __name__ == "__main__":  # pip / setuptools run this file as __main__; tests import backend_plan
    setup(
        ext_modules=[
            ext_cls(
                name="torch_tk._C",
                sources=sources,
                include_dirs=[csrc],
                define_macros=define,
                extra_compile_args={"cxx": cxx, "nvcc": nvcc_flags} if plan["backend"] else {"cxx": cxx},
            )
        ],
        cmdclass={"build_ext": cpp_extension.BuildExtension},
    )
