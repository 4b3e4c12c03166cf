# lit configuration for Loom's IR and end-to-end tests.
import os
import lit.formats

config.name = "Loom"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.loom_bin_dir, "..", "tests", "lit-out")
config.excludes = ["unit", "reference", "lit.cfg.py", "CMakeLists.txt"]
config.environment["PATH"] = os.pathsep.join(
    [config.loom_bin_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.substitutions.append(("%loom_src", config.loom_src_root))
# A build with AddressSanitizer (-DLOOM_SANITIZE=ON): tests that limit the
# address space cannot run there, since ASan reserves terabytes of shadow.
if getattr(config, "loom_sanitize", "OFF").upper() in ("ON", "TRUE", "1", "YES"):
    config.available_features.add("sanitizer")
# CUDA code generation, where the build found a CUDA toolkit's ptxas (12.1
# or later): generated PTX must assemble for the GPUs Loom targets.
ptxas = getattr(config, "ptxas", "")
if getattr(config, "cuda_codegen", "OFF").upper() in ("ON", "TRUE", "1", "YES"):
    config.available_features.add("cuda-codegen")
    config.substitutions.append(("%ptxas", ptxas))
# The toolkit's libdevice, which f64 math functions in GPU kernels link.
libdevice = getattr(config, "libdevice", "")
if libdevice and not libdevice.endswith("NOTFOUND") and os.path.exists(libdevice):
    config.available_features.add("libdevice")
# An MPI launcher, for data-parallel jobs of CPU processes (allowed to run
# as root, as CI does, and to put more ranks than cores on a machine).
# The launcher must start a job here, which a sandbox without the network
# it wants may refuse: then the tests that need it are unsupported.
import shutil
import subprocess
if shutil.which("mpirun"):
    for variable in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"):
        config.environment[variable] = "1"
    try:
        probe = subprocess.run(["mpirun", "--oversubscribe", "-np", "2", "true"],
                               env=dict(os.environ, **{
                                   "OMPI_ALLOW_RUN_AS_ROOT": "1",
                                   "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               timeout=60)
        if probe.returncode == 0:
            config.available_features.add("mpi")
            config.substitutions.append(("%mpirun", "mpirun --oversubscribe"))
        else:
            lit_config.note("mpirun cannot start a job here: " +
                            probe.stderr.decode(errors="replace")[-300:])
    except subprocess.TimeoutExpired:
        lit_config.note("mpirun did not start a job within 60 s")
# A machine with an NVIDIA GPU (its driver's control device): tests of what
# happens without one do not apply there.
if os.path.exists("/dev/nvidiactl"):
    config.available_features.add("gpu")
# A CPU that multiplies in bf16 (AVX512-BF16): `--precision bf16` runs there
# and is refused elsewhere.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        if " avx512_bf16" in cpuinfo.read():
            config.available_features.add("avx512bf16")
except OSError:
    pass
# ONNX's backend-test data (Debian's libonnx-testdata), which `loom
# onnx-test` runs; and PyTorch with ONNX export, for models exported here.
onnx_data = "/usr/share/libonnx-testdata/data"
if os.path.isdir(os.path.join(onnx_data, "node")):
    config.available_features.add("onnx-testdata")
    config.substitutions.append(("%onnx_data", onnx_data))
try:
    subprocess.run(["/usr/bin/python3", "-c", "import torch, onnx"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=120)
    config.available_features.add("torch-onnx")
    config.substitutions.append(("%torch_python", "/usr/bin/python3"))
except (OSError, subprocess.SubprocessError):
    pass
