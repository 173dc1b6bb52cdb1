// cuBLASLt, opened on the first GEMM that runs on a GPU rather than linked. Loading the library
// registers its GPU code: about 200 MB of pages touched and 0.13 s of system time at every
// process start, which each CPU-only shardc and shardrun run (and each test) would pay for a
// library it never calls.
#pragma once

#include "runtime/support/status.h"

#include <cublasLt.h>

namespace shardc::runtime::cuda {

// The cuBLASLt functions the kernels call, each of the type cublasLt.h declares.
struct CublasLtLibrary {
  decltype(&::cublasLtCreate) Create = nullptr;
  decltype(&::cublasLtGetStatusName) GetStatusName = nullptr;
  decltype(&::cublasLtGetStatusString) GetStatusString = nullptr;
  decltype(&::cublasLtMatmul) Matmul = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic = nullptr;
  decltype(&::cublasLtMatmulDescCreate) MatmulDescCreate = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) MatmulDescDestroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) MatrixLayoutCreate = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) MatrixLayoutSetAttribute = nullptr;
};

// Opens libcublasLt.so.<major of the headers built against> once per process (the dynamic
// loader's search: LD_LIBRARY_PATH, the executable's run path, the system's) and resolves every
// function; the error names `kernel`, the library and what failed.
Status openCublasLt(const char *kernel, const CublasLtLibrary **out);

} // namespace shardc::runtime::cuda
