// One row of a device's kernel table (cpu/registry.cpp, cuda/registry.cpp) and the lookup both
// tables use: each table is sorted by name (checked by the unit tests), so lookups binary-search.
#pragma once

#include "runtime/kernels/kernel.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace shardc::runtime {

struct KernelEntry {
  const char *name;
  KernelFn fn;
  WorkspaceFn workspace = nullptr; // null: the kernel needs no workspace
};

// The entry of `table` called `name`, or nullptr.
template <size_t N>
const KernelEntry *findKernelEntry(const KernelEntry (&table)[N], const std::string &name) {
  const KernelEntry *end = table + N;
  const KernelEntry *it = std::lower_bound(table, end, name,
                                           [](const KernelEntry &e, const std::string &n) {
                                             return std::strcmp(e.name, n.c_str()) < 0;
                                           });
  return it == end || name != it->name ? nullptr : it;
}

// The bytes of workspace `entry` needs for `args` (0 without a workspace function).
inline Status entryWorkspaceBytes(const KernelEntry &entry, const KernelArgs &args,
                                  uint64_t *bytes) {
  *bytes = 0;
  return entry.workspace ? entry.workspace(args, bytes) : Status::ok();
}

// The names of `table`, in its (sorted) order.
template <size_t N> std::vector<std::string> kernelEntryNames(const KernelEntry (&table)[N]) {
  std::vector<std::string> names;
  for (const KernelEntry &entry : table)
    names.emplace_back(entry.name);
  return names;
}

} // namespace shardc::runtime
