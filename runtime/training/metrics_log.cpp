#include "runtime/training/metrics_log.h"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstring>

namespace shardc::runtime {

namespace {

std::string number(double value, const char *format) {
  if (!std::isfinite(value))
    return "null";
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

} // namespace

MetricsLog::~MetricsLog() {
  if (file_ != nullptr)
    std::fclose(file_);
}

Status MetricsLog::open(const std::string &path) {
  if (file_ != nullptr)
    std::fclose(file_);
  path_ = path;
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr)
    return Status::error(path + ": cannot create the metrics file: " + std::strerror(errno));
  return Status::ok();
}

std::string MetricsLog::formatLine(int64_t step, float loss, float lr, double stepTimeMs,
                                   const CommCounters *comm, int64_t skippedSteps,
                                   const LossScale *lossScale) {
  std::string line = "{\"step\": " + std::to_string(step) + ", \"loss\": " + number(loss, "%.9g") +
                     ", \"lr\": " + number(lr, "%.9g") +
                     ", \"step_time_ms\": " + number(stepTimeMs, "%.3f");
  if (comm != nullptr) {
    line += ", \"comm_bytes\": {";
    for (int k = 0; k < kCollectiveKinds; ++k)
      line += std::string(k ? ", " : "") + "\"" + collectiveName(static_cast<CollectiveKind>(k)) +
              "\": " + std::to_string(comm->bytesSent[k]);
    line += "}";
  }
  if (skippedSteps >= 0)
    line += ", \"skipped_steps\": " + std::to_string(skippedSteps);
  if (lossScale != nullptr)
    // A power of two: printed whole, every digit exact.
    line += ", \"loss_scale\": " + number(lossScale->scale, "%.17g") +
            ", \"overflow\": " + (lossScale->overflow ? "true" : "false");
  return line + "}";
}

Status MetricsLog::write(int64_t step, float loss, float lr, double stepTimeMs,
                         const CommCounters *comm, int64_t skippedSteps,
                         const LossScale *lossScale) {
  if (file_ == nullptr)
    return Status::error("metrics file is not open");
  std::string line =
      formatLine(step, loss, lr, stepTimeMs, comm, skippedSteps, lossScale) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    return Status::error(path_ + ": cannot write the metrics file: " + std::strerror(errno));
  return Status::ok();
}

Status MetricsLog::close() {
  if (file_ == nullptr)
    return Status::ok();
  int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0)
    return Status::error(path_ + ": cannot write the metrics file: " + std::strerror(errno));
  return Status::ok();
}

} // namespace shardc::runtime
