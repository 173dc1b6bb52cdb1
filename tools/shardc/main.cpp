//===- main.cpp - shardc: ONNX model -> shardc bundle -----------------------------------===//
//
//   shardc MODEL.onnx --mode forward -o OUT.shard
//
// The command line (CommandLine.h) fills the compile options; the compiler library
// (shardc/Driver/Compile.h) does the rest. Errors are one line "shardc: error: ..." with exit
// code 1; usage errors exit with 2.
//
//===-------------------------------------------------------------------------------------===//
#include "CommandLine.h"

#include "shardc/Cost/Calibrate.h"
#include "shardc/Driver/Compile.h"
#include "shardc/Support/Diagnostics.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

// shardc calibrate [-o FILE]: measures this machine for --cluster cpu (Cost/Calibrate.h).
int calibrate(int argc, char **argv) {
  std::string path = shardc::cost::cpuCalibrationPath();
  for (int i = 2; i < argc; ++i) {
    if ((std::strcmp(argv[i], "-o") == 0 || std::strcmp(argv[i], "--output") == 0) &&
        i + 1 < argc) {
      path = argv[++i];
    } else if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      std::puts("usage: shardc calibrate [-o FILE]\n\nMeasures this machine's CPU kernels and "
                "local ranks for --cluster cpu and writes them to FILE (default " );
      std::printf("%s)\n", shardc::cost::cpuCalibrationPath().c_str());
      return 0;
    } else {
      std::fprintf(stderr, "shardc: error: calibrate: unknown argument '%s' (see 'shardc "
                           "calibrate --help')\n", argv[i]);
      return 2;
    }
  }
  std::fprintf(stderr, "shardc calibrate: measuring (about a minute)...\n");
  shardc::cost::Cluster cluster;
  std::vector<std::string> log;
  std::string error;
  if (!shardc::cost::calibrateCpu(cluster, log, error)) {
    shardc::printError(error);
    return 1;
  }
  for (const std::string &line : log)
    std::fprintf(stderr, "shardc calibrate: %s\n", line.c_str());
  std::error_code ec;
  if (auto dir = std::filesystem::path(path).parent_path(); !dir.empty())
    std::filesystem::create_directories(dir, ec);
  std::ofstream out(path);
  out << shardc::cost::clusterToJson(cluster);
  out.close();
  if (!out.good()) {
    shardc::printError(path + ": cannot write the calibration");
    return 1;
  }
  std::fprintf(stderr, "shardc calibrate: wrote %s (--cluster cpu reads it)\n", path.c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc >= 2 && std::strcmp(argv[1], "calibrate") == 0)
    return calibrate(argc, argv);
  shardc::CompileOptions opts;
  switch (shardc::driver::parseCommandLine(argc, argv, opts)) {
  case shardc::driver::ParseResult::ExitSuccess:
    return 0;
  case shardc::driver::ParseResult::UsageError:
    return 2;
  case shardc::driver::ParseResult::Ok:
    break;
  }
  try {
    return shardc::compileModel(opts);
  } catch (const std::exception &e) {
    shardc::printError(opts.model + ": internal error: " + e.what());
    return 1;
  }
}
