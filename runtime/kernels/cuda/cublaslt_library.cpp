#include "runtime/kernels/cuda/cublaslt_library.h"

#include <dlfcn.h>

#include <string>

namespace shardc::runtime::cuda {

namespace {

const std::string &libraryName() {
  static const std::string name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  return name;
}

// Resolves `symbol` into `fn`; false (with `error` set) when the library lacks it.
template <typename Fn> bool resolve(void *library, const char *symbol, Fn *fn, std::string *error) {
  *fn = reinterpret_cast<Fn>(dlsym(library, symbol));
  if (*fn == nullptr)
    *error = libraryName() + " has no " + symbol;
  return *fn != nullptr;
}

struct Opened {
  CublasLtLibrary library;
  std::string error; // empty: every function resolved
};

Opened open() {
  Opened opened;
  void *handle = dlopen(libraryName().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char *why = dlerror();
    opened.error = "cannot open " + libraryName() + ": " + (why ? why : "unknown error");
    return opened;
  }
  CublasLtLibrary &l = opened.library;
  std::string &e = opened.error;
  // The library stays open for the process: its handles and algorithms are cached per thread.
  (void)(resolve(handle, "cublasLtCreate", &l.Create, &e) &&
         resolve(handle, "cublasLtGetStatusName", &l.GetStatusName, &e) &&
         resolve(handle, "cublasLtGetStatusString", &l.GetStatusString, &e) &&
         resolve(handle, "cublasLtMatmul", &l.Matmul, &e) &&
         resolve(handle, "cublasLtMatmulAlgoGetHeuristic", &l.MatmulAlgoGetHeuristic, &e) &&
         resolve(handle, "cublasLtMatmulDescCreate", &l.MatmulDescCreate, &e) &&
         resolve(handle, "cublasLtMatmulDescDestroy", &l.MatmulDescDestroy, &e) &&
         resolve(handle, "cublasLtMatmulDescSetAttribute", &l.MatmulDescSetAttribute, &e) &&
         resolve(handle, "cublasLtMatmulPreferenceCreate", &l.MatmulPreferenceCreate, &e) &&
         resolve(handle, "cublasLtMatmulPreferenceDestroy", &l.MatmulPreferenceDestroy, &e) &&
         resolve(handle, "cublasLtMatmulPreferenceSetAttribute", &l.MatmulPreferenceSetAttribute,
                 &e) &&
         resolve(handle, "cublasLtMatrixLayoutCreate", &l.MatrixLayoutCreate, &e) &&
         resolve(handle, "cublasLtMatrixLayoutDestroy", &l.MatrixLayoutDestroy, &e) &&
         resolve(handle, "cublasLtMatrixLayoutSetAttribute", &l.MatrixLayoutSetAttribute, &e));
  return opened;
}

} // namespace

Status openCublasLt(const char *kernel, const CublasLtLibrary **out) {
  static const Opened opened = open(); // thread-safe, once
  if (!opened.error.empty())
    return Status::error(std::string(kernel) + ": cuBLASLt: " + opened.error);
  *out = &opened.library;
  return Status::ok();
}

} // namespace shardc::runtime::cuda
