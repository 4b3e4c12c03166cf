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
# CUDA's assembler, where the build found the toolkit: generated PTX must
# assemble for the GPUs Loom targets.
ptxas = getattr(config, "ptxas", "")
if ptxas and not ptxas.endswith("NOTFOUND") and os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
# A machine with an NVIDIA GPU (its driver's control device): tests of what
# happens without one do not apply there.
if os.path.exists("/dev/nvidiactl"):
    config.available_features.add("gpu")
