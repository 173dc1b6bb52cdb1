// cuBLASLt is opened at run time (runtime/kernels/cuda/cublaslt_library.h): the library the
// headers name opens and has every function the kernels call. Needs the library, not a GPU.
#include "runtime/kernels/cuda/cublaslt_library.h"

#include <gtest/gtest.h>

#include <cstring>

namespace shardc::runtime::cuda {
namespace {

TEST(CublasLtLibrary, OpensAndResolvesEveryFunction) {
  const CublasLtLibrary *library = nullptr;
  const Status opened = openCublasLt("matmul", &library);
  ASSERT_TRUE(opened.isOk()) << opened.message();
  ASSERT_NE(library, nullptr);
  const void *functions[] = {
      reinterpret_cast<const void *>(library->Create),
      reinterpret_cast<const void *>(library->GetStatusName),
      reinterpret_cast<const void *>(library->GetStatusString),
      reinterpret_cast<const void *>(library->Matmul),
      reinterpret_cast<const void *>(library->MatmulAlgoGetHeuristic),
      reinterpret_cast<const void *>(library->MatmulDescCreate),
      reinterpret_cast<const void *>(library->MatmulDescDestroy),
      reinterpret_cast<const void *>(library->MatmulDescSetAttribute),
      reinterpret_cast<const void *>(library->MatmulPreferenceCreate),
      reinterpret_cast<const void *>(library->MatmulPreferenceDestroy),
      reinterpret_cast<const void *>(library->MatmulPreferenceSetAttribute),
      reinterpret_cast<const void *>(library->MatrixLayoutCreate),
      reinterpret_cast<const void *>(library->MatrixLayoutDestroy),
      reinterpret_cast<const void *>(library->MatrixLayoutSetAttribute),
  };
  for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); ++i)
    EXPECT_NE(functions[i], nullptr) << "function " << i;
  // The resolved functions are cuBLASLt's: they run without a GPU where they need none.
  EXPECT_STREQ(library->GetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
  // Opened once: the same table every time.
  const CublasLtLibrary *again = nullptr;
  ASSERT_TRUE(openCublasLt("gemm", &again).isOk());
  EXPECT_EQ(again, library);
}

} // namespace
} // namespace shardc::runtime::cuda
