//===- ExternalData.cpp -----------------------------------------------------------------===//
#include "frontends/onnx/ExternalData.h"

#include "frontends/onnx/ErrorReporting.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace shardc::onnx_import {

namespace {

// Offsets and lengths are decimal byte counts; anything else is a malformed model.
std::optional<int64_t> parseByteCount(llvm::StringRef text) {
  uint64_t value = 0;
  if (text.empty() || text.getAsInteger(10, value) || value > static_cast<uint64_t>(INT64_MAX))
    return std::nullopt;
  return static_cast<int64_t>(value);
}

bool escapesModelDirectory(llvm::StringRef location) {
  if (llvm::sys::path::is_absolute(location))
    return true;
  for (llvm::StringRef part :
       llvm::make_range(llvm::sys::path::begin(location), llvm::sys::path::end(location)))
    if (part == "..")
      return true;
  return false;
}

} // namespace

mlir::LogicalResult parseExternalDataRef(const onnx::TensorProto &tensor, ExternalDataRef &ref,
                                         std::string &why) {
  bool hasLocation = false;
  for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
    const std::string &key = entry.key();
    if (key == "location") {
      ref.location = entry.value();
      hasLocation = true;
    } else if (key == "offset" || key == "length") {
      std::optional<int64_t> value = parseByteCount(entry.value());
      if (!value) {
        why = "external data " + key + " " + quote(entry.value()) + " is not a byte count";
        return mlir::failure();
      }
      if (key == "offset")
        ref.offset = *value;
      else
        ref.length = *value;
    }
    // "checksum" and unknown keys carry nothing the importer needs.
  }
  if (!hasLocation || ref.location.empty()) {
    why = "external data has no location";
    return mlir::failure();
  }
  if (ref.location.find('\0') != std::string::npos || escapesModelDirectory(ref.location)) {
    why = "external data location " + quote(ref.location) +
          " must be a relative path inside the model's directory";
    return mlir::failure();
  }
  return mlir::success();
}

mlir::LogicalResult readExternalData(llvm::StringRef baseDir, const ExternalDataRef &ref,
                                     int64_t byteCount, std::vector<char> &out, bool &missing,
                                     std::string &why) {
  missing = false;
  std::string shown = "external data file " + quote(ref.location);
  if (ref.length && *ref.length != byteCount) {
    why = shown + ": length " + std::to_string(*ref.length) + " does not match the tensor's " +
          std::to_string(byteCount) + " bytes";
    return mlir::failure();
  }
  llvm::SmallString<256> path(baseDir);
  llvm::sys::path::append(path, ref.location);

  // Not opened unless it is a regular file: opening a named pipe would block.
  llvm::sys::fs::file_status pathStatus;
  if (!llvm::sys::fs::status(path, pathStatus) &&
      pathStatus.type() != llvm::sys::fs::file_type::regular_file) {
    why = shown + " is not a regular file";
    return mlir::failure();
  }
  // The location's text stays inside the model's directory (parseExternalDataRef), but a
  // symbolic link on the way may not: the resolved path must lie there too.
  llvm::SmallString<256> realFile, realDir;
  if (!llvm::sys::fs::real_path(path, realFile) && !llvm::sys::fs::real_path(baseDir, realDir) &&
      !llvm::StringRef(realFile).starts_with(std::string(realDir) + "/")) {
    why = shown + " resolves to " + quote(std::string(realFile)) +
          ", outside the model's directory (through a symbolic link)";
    return mlir::failure();
  }
  llvm::Expected<llvm::sys::fs::file_t> opened = llvm::sys::fs::openNativeFileForRead(path);
  if (!opened) {
    std::error_code ec = llvm::errorToErrorCode(opened.takeError());
    if (ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory) {
      missing = true;
      return mlir::success();
    }
    why = "cannot open " + shown + ": " + ec.message();
    return mlir::failure();
  }
  llvm::sys::fs::file_t file = *opened;
  auto close = llvm::make_scope_exit([&] { llvm::sys::fs::closeFile(file); });

  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(file, status)) {
    why = "cannot read " + shown + ": " + ec.message();
    return mlir::failure();
  }
  if (status.type() != llvm::sys::fs::file_type::regular_file) {
    why = shown + " is not a regular file";
    return mlir::failure();
  }
  uint64_t fileSize = status.getSize();
  if (static_cast<uint64_t>(ref.offset) > fileSize ||
      static_cast<uint64_t>(byteCount) > fileSize - ref.offset) {
    why = shown + " is too short: the tensor needs bytes [" + std::to_string(ref.offset) + ", " +
          std::to_string(ref.offset) + "+" + std::to_string(byteCount) + ") but the file has " +
          std::to_string(fileSize);
    return mlir::failure();
  }

  out.resize(byteCount);
  size_t done = 0;
  while (done < out.size()) {
    llvm::Expected<size_t> n = llvm::sys::fs::readNativeFileSlice(
        file, llvm::MutableArrayRef<char>(out).drop_front(done), ref.offset + done);
    if (!n || *n == 0) {
      why = "cannot read " + shown +
            (n ? std::string(": unexpected end of file") : ": " + llvm::toString(n.takeError()));
      return mlir::failure();
    }
    done += *n;
  }
  return mlir::success();
}

} // namespace shardc::onnx_import
