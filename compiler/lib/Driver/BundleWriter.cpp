//===- BundleWriter.cpp -----------------------------------------------------------------===//
#include "shardc/Driver/BundleWriter.h"
#include "shardc/Plan/PlanReport.h"

#include "runtime/loader/bundle.h"
#include "runtime/support/file_io.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <xxhash.h>

namespace shardc {

namespace {
bool makeDirectory(const std::string &dir, std::string &error) {
  if (::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) {
    struct stat st;
    if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      return true;
    error = dir + ": exists and is not a directory";
    return false;
  }
  error = dir + ": cannot create directory: " + std::strerror(errno);
  return false;
}

bool writeFile(const std::string &path, const void *data, size_t size, std::string &error) {
  runtime::Status status = runtime::writeFileAtomically(path, data, size);
  if (!status.isOk())
    error = status.message();
  return status.isOk();
}
} // namespace

bool writeBundle(const std::string &dir, program::Bundle bundle, const std::vector<char> *weights,
                 const std::string *sourceOnnx, std::string &error, const PlanNotes &notes) {
  if (!makeDirectory(dir, error))
    return false;
  std::string weightsPath = dir + "/" + kWeightsFileName;
  if (weights) {
    bundle.set_weights_file(kWeightsFileName);
    bundle.set_weights_checksum(XXH3_64bits(weights->data(), weights->size()));
    if (!writeFile(weightsPath, weights->data(), weights->size(), error))
      return false;
  } else {
    bundle.clear_weights_file();
    // A stale weights file from an earlier compile must not look like it belongs here.
    std::remove(weightsPath.c_str());
  }
  std::string sourcePath = dir + "/" + kSourceOnnxFileName;
  if (sourceOnnx) {
    bundle.set_source_onnx_file(kSourceOnnxFileName);
    bundle.set_source_onnx_checksum(XXH3_64bits(sourceOnnx->data(), sourceOnnx->size()));
    if (!writeFile(sourcePath, sourceOnnx->data(), sourceOnnx->size(), error))
      return false;
  } else {
    bundle.clear_source_onnx_file();
    bundle.clear_source_onnx_checksum();
    // Nor a stale source.onnx (e.g. a forward compile into an earlier training bundle).
    std::remove(sourcePath.c_str());
  }
  // Deterministic: the kernels' attributes are a protobuf map, whose order would otherwise
  // follow a hash seeded per process, so that the same compile wrote different bytes each time.
  std::string serialized;
  {
    google::protobuf::io::StringOutputStream stream(&serialized);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!bundle.SerializeToCodedStream(&coded)) {
      error = dir + ": cannot serialise the program";
      return false;
    }
  }
  if (!writeFile(dir + "/" + kProgramFileName, serialized.data(), serialized.size(), error))
    return false;
  std::string checksum = runtime::programChecksumText(serialized.data(), serialized.size());
  if (!writeFile(dir + "/" + runtime::kProgramChecksumFile, checksum.data(), checksum.size(),
                 error))
    return false;
  std::string plan = formatPlan(bundle, notes);
  if (!writeFile(dir + "/" + kPlanFileName, plan.data(), plan.size(), error))
    return false;
  std::string planJson = formatPlanJson(bundle, notes);
  if (!writeFile(dir + "/" + kPlanJsonFileName, planJson.data(), planJson.size(), error))
    return false;
  const std::string tracePath = dir + "/" + kPredictedTraceFileName;
  // The cost model's timeline in seconds (--cluster), else the pipeline schedule's in FLOPs.
  const std::string &trace = notes.costTrace.empty() ? notes.pipelineTrace : notes.costTrace;
  if (trace.empty()) {
    std::remove(tracePath.c_str()); // an earlier compile's into the same directory
    return true;
  }
  return writeFile(tracePath, trace.data(), trace.size(), error);
}

} // namespace shardc
