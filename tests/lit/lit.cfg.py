# lit configuration for shardc's IR tests: dialect round-trips and verifiers, the passes' tests
# (passes/<phase>/, as the passes are laid out), and importer tests that build small ONNX models
# with Debian's python3-onnx.
import os

import lit.formats

config.name = "shardc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["Inputs"]

path = os.pathsep.join(config.shardc_tools_dirs + [config.llvm_tools_dir, config.environment.get("PATH", "")])
config.environment["PATH"] = path
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
