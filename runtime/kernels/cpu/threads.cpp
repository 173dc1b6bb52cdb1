// Thread count of the CPU kernels. Only the OpenBLAS GEMMs are multi-threaded today; the
// elementwise kernels run on the calling thread.
#include "runtime/kernels/kernel.h"

#include <cblas.h>

namespace shardc::runtime {

void setCpuKernelThreads(int threads) { openblas_set_num_threads(threads); }

} // namespace shardc::runtime
