//===- PlanReport.cpp - plan.txt --------------------------------------------------------===//
//
// One rank: the program's memory, bindings and op list. Several ranks: first what the whole
// run looks like (mesh and strategy, parameters and their sharding, memory per rank, the ZeRO
// formulas, the collectives of one step), from PlanSummary; then each distinct program as for
// one rank, the op list once when every rank runs the same ops.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Plan/PlanReport.h"
#include "shardc/Plan/PlanSummary.h"

#include "runtime/common/planned_memory.h"
#include "runtime/kernels/kernel.h"
#include "runtime/loader/op_workspace.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

namespace shardc {

namespace {

std::string typeString(const program::Buffer &b) {
  std::string s = runtime::dtypeName(b.dtype());
  s += "[";
  for (int i = 0; i < b.shape_size(); ++i)
    s += (i ? "x" : "") + std::to_string(b.shape(i));
  return s + "]";
}

std::string bytesString(uint64_t n) {
  char buf[64];
  if (n < 10 * 1024)
    std::snprintf(buf, sizeof buf, "%" PRIu64 " B", n);
  else if (n < 10ull * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", n / 1024.0);
  else if (n < 10ull * 1024 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f MiB", n / (1024.0 * 1024.0));
  else
    std::snprintf(buf, sizeof buf, "%.1f GiB", n / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string where(const program::Buffer &b) {
  return std::string(b.region() == program::WEIGHTS ? "W@" : "A@") + std::to_string(b.offset());
}

std::string operand(const program::Program &p, int32_t id) {
  if (id < 0)
    return "-";
  const program::Buffer &b = p.buffers(id);
  std::string s = "%" + std::to_string(id) + " " + typeString(b) + " " + where(b);
  return s;
}

// "123456 FLOP", "1.23 GFLOP": exact below a million, else scaled.
std::string flopsString(uint64_t n) {
  if (n < 1000000)
    return std::to_string(n) + " FLOP";
  char buf[64];
  const char *units[] = {"MFLOP", "GFLOP", "TFLOP", "PFLOP"};
  double value = n / 1e6;
  int unit = 0;
  while (value >= 1000 && unit < 3) {
    value /= 1000;
    ++unit;
  }
  std::snprintf(buf, sizeof buf, "%.3g %s", value, units[unit]);
  return buf;
}

// "12345 bytes (12.1 KiB)": exact, so the breakdown can be added up, and readable.
std::string exactBytes(uint64_t n) {
  std::string s = std::to_string(n) + " bytes";
  if (n >= 10 * 1024)
    s += " (" + bytesString(n) + ")";
  return s;
}

// A table cell of bytes: "12345" or "1234567 (1.2 MiB)".
std::string bytesCell(uint64_t n) {
  std::string s = std::to_string(n);
  if (n >= 10 * 1024)
    s += " (" + bytesString(n) + ")";
  return s;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  if (shape.empty())
    return "[]";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

// A real number with up to one decimal ("13.3", "12").
std::string decimal(double value) {
  char buf[64];
  if (value == std::floor(value))
    std::snprintf(buf, sizeof buf, "%.0f", value);
  else
    std::snprintf(buf, sizeof buf, "%.1f", value);
  return buf;
}

std::string plural(uint64_t n, const char *one, const char *many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// `text` as lines of at most `width` columns (words are not split), each starting with
// `indent` (the first with `first`), for the explanations under the tables.
void wrap(std::ostringstream &os, const std::string &first, const std::string &indent,
          const std::string &text, size_t width = 96) {
  std::string line = first;
  size_t lineWidth = first.size(), begin = 0;
  bool empty = true;
  while (begin < text.size()) {
    size_t end = text.find(' ', begin);
    if (end == std::string::npos)
      end = text.size();
    std::string word = text.substr(begin, end - begin);
    size_t wordWidth = 0;
    for (unsigned char c : word)
      wordWidth += (c & 0xC0) != 0x80;
    if (!empty && lineWidth + 1 + wordWidth > width) {
      os << line << "\n";
      line = indent;
      lineWidth = indent.size();
      empty = true;
    }
    if (!empty) {
      line += " ";
      ++lineWidth;
    }
    line += word;
    lineWidth += wordWidth;
    empty = false;
    begin = end + 1;
  }
  os << line << "\n";
}

// Columns of text, padded to their widest cell (display width: UTF-8 continuation bytes do not
// count).
class Table {
public:
  explicit Table(std::string rightAligned) : rightAligned_(std::move(rightAligned)) {}
  void add(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }

  void print(std::ostringstream &os, const std::string &indent) const {
    std::vector<size_t> widths;
    for (const auto &row : rows_)
      for (size_t i = 0; i < row.size(); ++i) {
        if (widths.size() <= i)
          widths.push_back(0);
        widths[i] = std::max(widths[i], width(row[i]));
      }
    for (const auto &row : rows_) {
      std::string line = indent;
      for (size_t i = 0; i < row.size(); ++i) {
        std::string pad(widths[i] - width(row[i]), ' ');
        bool right = i < rightAligned_.size() && rightAligned_[i] == 'r';
        bool last = i + 1 == row.size();
        line += right ? pad + row[i] : row[i] + (last ? "" : pad);
        if (!last)
          line += "  ";
      }
      while (!line.empty() && line.back() == ' ')
        line.pop_back();
      os << line << "\n";
    }
  }

private:
  static size_t width(const std::string &s) {
    size_t n = 0;
    for (unsigned char c : s)
      n += (c & 0xC0) != 0x80;
    return n;
  }
  std::string rightAligned_; // 'r' per right-aligned column
  std::vector<std::vector<std::string>> rows_;
};

// Where the arena peaks: a schedule point of runtime::PlannedMemory.
std::string schedulePoint(const program::Program &p, int64_t point) {
  if (point < 0)
    return "as the inputs are copied in";
  if (point >= p.ops_size())
    return "as the outputs are copied out";
  const program::Op &op = p.ops(static_cast<int>(point));
  return "during #" + std::to_string(point) + " " + op.kernel() + " '" + op.name() + "'";
}

// A role's bytes by element type: ", f32" for one, ": f32 N + bf16 M" for several.
std::string byDtype(const std::map<program::DType, uint64_t> &bytes) {
  if (bytes.empty())
    return "";
  if (bytes.size() == 1)
    return std::string(", ") + runtime::dtypeName(bytes.begin()->first);
  std::string text;
  for (auto [dtype, n] : bytes)
    text += (text.empty() ? ": " : " + ") + std::string(runtime::dtypeName(dtype)) + " " +
            std::to_string(n);
  return text;
}

constexpr program::BufferRole kRoleOrder[] = {
    program::ROLE_PARAMETER,         program::ROLE_GRADIENT,
    program::ROLE_OPTIMIZER_STATE,   program::ROLE_INPUT,
    program::ROLE_ACTIVATION,        program::ROLE_CONSTANT,
    program::ROLE_BUFFER,            program::BUFFER_ROLE_UNSPECIFIED};

// The planned peak memory and what it is made of (runtime/common/planned_memory.h). Every
// line below a total adds up to it.
void formatMemory(const program::Program &p, std::ostringstream &os) {
  runtime::PlannedMemory plan = runtime::planPeakMemory(p, &runtime::opWorkspaceBytes);
  os << "memory: planned peak " << exactBytes(p.planned_peak_bytes())
     << " = arena + weights + workspace"
     << (plan.commWorkspace > 0 ? " + communication workspace" : "")
     << " + step inputs + step outputs\n";
  os << "  arena: " << exactBytes(plan.arena) << ", at its peak "
     << schedulePoint(p, plan.arenaPeakPoint) << ":\n";
  for (program::BufferRole role : kRoleOrder) {
    uint64_t bytes = plan.arenaLiveByRole[static_cast<size_t>(role)];
    if (bytes > 0 || role == program::ROLE_ACTIVATION)
      os << "    " << runtime::bufferRoleName(role) << ": " << exactBytes(bytes)
         << byDtype(plan.arenaLiveByRoleAndDtype[static_cast<size_t>(role)]) << "\n";
  }
  os << "    unused (fragmentation, alignment): " << exactBytes(plan.arenaUnused) << "\n";
  os << "  weights: " << exactBytes(plan.weights) << "\n";
  os << "    parameters: " << exactBytes(plan.weightsParameters) << "\n";
  os << "    constants: " << exactBytes(plan.weightsConstants) << "\n";
  os << "    alignment: " << exactBytes(plan.weightsPadding) << "\n";
  os << "  workspace: " << exactBytes(plan.workspace);
  if (plan.workspaceOp >= 0) {
    const program::Op &op = p.ops(static_cast<int>(plan.workspaceOp));
    os << " (largest need: #" << plan.workspaceOp << " " << op.kernel() << " '" << op.name()
       << "', " << p.workspace_bytes() << " bytes)";
  }
  os << "\n";
  if (plan.commWorkspace > 0) {
    int async = 0;
    for (const program::Op &op : p.ops())
      async += op.completes_before() != 0 ? 1 : 0;
    os << "  communication workspace: " << exactBytes(plan.commWorkspace) << " (the scratch of "
       << async << " asynchronous collective" << (async == 1 ? "" : "s")
       << ", which run while the ops before their first reader do)\n";
  }
  os << "  step inputs: " << exactBytes(plan.stepInputs) << " (host tensors, one per input)\n";
  os << "  step outputs: " << exactBytes(plan.stepOutputs) << " (host tensors, one per output)\n";
}

void formatOps(const program::Program &p, std::ostringstream &os) {
  os << "\nprogram (A@ = arena offset, W@ = weights offset, in bytes):\n";
  for (int i = 0; i < p.ops_size(); ++i) {
    const program::Op &op = p.ops(i);
    os << "  #" << i << " " << op.kernel() << " '" << op.name() << "'";
    if (op.completes_before() != 0)
      os << " (asynchronous: overlaps #" << i + 1 << "..#" << op.completes_before() - 1
         << ", complete before #" << op.completes_before() << ")";
    os << "\n      in: ";
    for (int j = 0; j < op.inputs_size(); ++j)
      os << (j ? ", " : "") << operand(p, op.inputs(j));
    os << "\n      out: ";
    for (int j = 0; j < op.outputs_size(); ++j)
      os << (j ? ", " : "") << operand(p, op.outputs(j));
    os << "\n";
  }
}

// The program's memory, bindings and kernel histogram (no header line, no op list).
void formatProgramBody(const program::Program &p, std::ostringstream &os) {
  uint64_t paramCount = 0, paramElems = 0;
  for (const program::Buffer &b : p.buffers()) {
    if (b.role() != program::ROLE_PARAMETER || b.kind() == program::ACTIVATION)
      continue;
    ++paramCount;
    uint64_t n = 1;
    for (int64_t d : b.shape())
      n *= d;
    paramElems += n;
  }
  formatMemory(p, os);
  os << "parameters: " << paramCount << " tensors, " << paramElems << " elements\n";
  if (p.planned_flops() > 0)
    os << "compute: " << flopsString(p.planned_flops())
       << " per step (planned_flops; products counted exactly)\n";
  os << "inputs:\n";
  for (const program::Binding &b : p.inputs())
    os << "  " << b.name() << ": " << operand(p, b.buffer())
       << (b.in_place() ? " (updated in place)" : "")
       << (b.batch_dim() ? " (batch rows in dim " + std::to_string(b.batch_dim()) + ")" : "")
       << "\n";
  if (p.state_init_size() > 0) {
    uint64_t bytes = 0;
    for (const program::StateInit &s : p.state_init())
      bytes += s.size_bytes();
    // Updated buffers (running statistics) are fed back too, but not trained.
    int buffers = 0;
    for (const program::Binding &b : p.inputs())
      if (b.buffer() >= 0 && b.buffer() < p.buffers_size() &&
          p.buffers(b.buffer()).role() == program::ROLE_BUFFER)
        ++buffers;
    // What the step updates in place stays in the arena; the rest is copied out and fed back.
    int inPlace = 0, fedBack = 0;
    uint64_t inPlaceBytes = 0, fedBackBytes = 0;
    for (const program::Binding &b : p.outputs()) {
      if (b.name() == "loss" || b.buffer() < 0 || b.buffer() >= p.buffers_size())
        continue;
      (b.in_place() ? inPlace : fedBack) += 1;
      (b.in_place() ? inPlaceBytes : fedBackBytes) += p.buffers(b.buffer()).size_bytes();
    }
    os << "training state: " << p.state_init_size() - buffers << " trained parameters";
    if (buffers > 0)
      os << " and " << buffers << " updated buffers";
    os << " (initial values " << bytesString(bytes)
       << " read from the weights file when training starts); carried from step to step: "
       << inPlace << " tensors (" << bytesString(inPlaceBytes)
       << ") updated in place in the arena, " << fedBack << " (" << bytesString(fedBackBytes)
       << ") copied out and fed back\n";
  }
  os << "outputs:\n";
  for (const program::Binding &b : p.outputs())
    os << "  " << b.name() << ": " << operand(p, b.buffer())
       << (b.in_place() ? " (in place: the input's bytes)" : "") << "\n";

  std::map<std::string, int> histogram;
  for (const program::Op &op : p.ops())
    ++histogram[op.kernel()];
  os << "kernels: " << p.ops_size() << " calls:";
  for (auto &[kernel, count] : histogram)
    os << " " << kernel << "(" << count << ")";
  os << "\n";
}

// A section of the compiler's decision lines (PlanNotes), printed as given; nothing when empty.
void formatNoteLines(const char *title, const std::vector<std::string> &lines,
                     std::ostringstream &os) {
  if (lines.empty())
    return;
  os << "== " << title << "\n";
  for (const std::string &line : lines)
    os << "  " << line << "\n";
  os << "\n";
}

void formatStrategyDecision(const std::vector<std::string> &lines, std::ostringstream &os) {
  formatNoteLines("Strategy decision", lines, os);
}

void formatPrediction(const PlanNotes &notes, std::ostringstream &os) {
  formatNoteLines("Predicted step (the cost model, docs/architecture.md \"Cost model\")",
                  notes.predictionLines, os);
}

// How the trained set was chosen, and the initializers the step keeps frozen although the
// export made them look like parameters, and why.
void formatTrainedSet(const PlanNotes &notes, std::ostringstream &os) {
  if (notes.trainedSetSource.empty() && notes.notTrained.empty() && notes.quantizedBase.empty())
    return;
  os << "== Trained set\n";
  if (!notes.trainedSetSource.empty())
    os << "  source: " << notes.trainedSetSource << "\n";
  if (!notes.quantizedBase.empty()) {
    // --base-dtype: which frozen weights are stored in fewer bits (their bytes are in the
    // memory section's weights region).
    std::map<std::string, size_t> perFormat;
    for (const PlanNotes::QuantizedWeight &q : notes.quantizedBase)
      ++perFormat[q.format];
    os << "  stored in fewer bits (--base-dtype; dequantized inside their products):";
    for (const auto &[format, count] : perFormat)
      os << " " << count << " weight" << (count == 1 ? "" : "s") << " as " << format;
    os << "\n";
    for (const PlanNotes::QuantizedWeight &q : notes.quantizedBase)
      os << "    " << q.weight << ": " << q.format << "\n";
  }
  if (!notes.doubtfulTrained.empty()) {
    os << "  trained, but holding values no random initialisation gives (--freeze them if "
          "PyTorch keeps them fixed):\n";
    for (const std::string &line : notes.doubtfulTrained)
      os << "    " << line << "\n";
  }
  if (!notes.notTrained.empty()) {
    os << "  not trained (" << notes.notTrained.size()
       << " initializers that are not trained parameters):\n";
    for (const std::string &line : notes.notTrained)
      os << "    " << line << "\n";
  }
  os << "\n";
}

// What shardc-remat recomputes, per unit (the summary is on the "remat:" line).
void formatRemat(const std::vector<std::string> &lines, std::ostringstream &os) {
  if (lines.size() > 1)
    formatNoteLines("Recomputation (per unit: activations kept for the backward pass, what is "
                    "recomputed instead)",
                    {lines.begin() + 1, lines.end()}, os);
}

// The tensor-parallel layout's decisions, as the compiler made them.
void formatLayoutDecisions(const std::vector<std::string> &lines, std::ostringstream &os) {
  formatNoteLines("Tensor-parallel layout (what is split on tp, what stays whole and why)", lines,
                  os);
}

// ---- several ranks --------------------------------------------------------------------------

// What the ZeRO stage shards, for the strategy line: a name and one line of detail.
std::pair<const char *, const char *> stageDescription(int stage) {
  switch (stage) {
  case 0:
    return {"plain data parallelism (ZeRO-0)",
            "parameters, gradients and optimizer state replicated; gradients all-reduced in "
            "buckets"};
  case 1:
    return {"ZeRO-1", "optimizer state sharded; gradients reduce-scattered after the backward "
                      "pass, updated parameter shards all-gathered"};
  case 2:
    return {"ZeRO-2", "optimizer state and gradients sharded (each gradient bucket "
                      "reduce-scattered once final), updated parameter shards all-gathered"};
  case 3:
    return {"ZeRO-3 (FSDP)", "parameters, gradients and optimizer state sharded; each unit's "
                             "parameters all-gathered for the forward and again for the "
                             "backward pass"};
  default:
    return {"unknown ZeRO stage", ""};
  }
}

// "{0, 2}, {1, 3}".
std::string rankLists(const std::vector<std::vector<int>> &lists) {
  std::string out;
  for (size_t i = 0; i < lists.size(); ++i) {
    out += i ? ", {" : "{";
    for (size_t j = 0; j < lists[i].size(); ++j)
      out += (j ? ", " : "") + std::to_string(lists[i][j]);
    out += "}";
  }
  return out;
}

// A rank's place in the mesh, axis by axis: "dp=0, tp=1".
std::string coordinateText(const PlanSummary &s, const std::vector<int> &coordinate) {
  std::string out;
  for (size_t i = 0; i < coordinate.size() && i < s.meshAxes.size(); ++i)
    out += (i ? ", " : "") + s.meshAxes[i].first + "=" + std::to_string(coordinate[i]);
  return out;
}

// The strategy, the mesh and the batch split without a mesh: data parallelism over the world.
void formatDataParallelMesh(const PlanSummary &s, std::ostringstream &os) {
  auto [stageName, stageDetail] = stageDescription(s.zeroStage);
  os << "strategy: " << (s.strategy.empty() ? "(not recorded)" : s.strategy) << " = " << stageName
     << "\n";
  wrap(os, "  ", "  ", stageDetail);
  os << "mesh:";
  int devices = 1;
  for (size_t i = 0; i < s.mesh.size(); ++i) {
    os << (i ? " x " : " ") << s.mesh[i].first << "=" << s.mesh[i].second;
    devices *= s.mesh[i].second;
  }
  os << " (" << plural(devices, "rank", "ranks") << "); every collective runs over the dp axis\n";
  if (s.globalBatchRows > 0) {
    std::string line =
        "batch: " + std::to_string(s.globalBatchRows) + " rows per step, split over dp:";
    std::vector<std::vector<int>> byRows;
    std::vector<int64_t> rows;
    for (const PlanRank &r : s.ranks) {
      auto it = std::find(rows.begin(), rows.end(), r.batchRows);
      if (it == rows.end()) {
        rows.push_back(r.batchRows);
        byRows.push_back({r.rank});
      } else {
        byRows[it - rows.begin()].push_back(r.rank);
      }
    }
    for (size_t i = 0; i < rows.size(); ++i)
      line += std::string(i ? ";" : "") + " " + formatRankSet(byRows[i]) + ": " +
              plural(static_cast<uint64_t>(rows[i]), "row", "rows") +
              (byRows[i].size() > 1 ? " each" : "");
    wrap(os, "", "  ", line + " (rank r takes the rows after rank r-1's)");
  }
}

// The strategy, the mesh's axes and what each does, the groups collectives run over, and the
// batch split, for programs on a mesh (tensor parallelism).
void formatMeshAxes(const PlanSummary &s, std::ostringstream &os) {
  const int dp = s.axisSize("dp"), tp = s.axisSize("tp");
  auto [stageName, stageDetail] = stageDescription(s.zeroStage);
  std::vector<std::string> parts;
  if (dp > 1)
    parts.push_back(std::string(stageName) + " on dp");
  if (tp > 1)
    parts.push_back("tensor parallelism on tp");
  std::string what;
  for (size_t i = 0; i < parts.size(); ++i)
    what += (i ? " + " : "") + parts[i];
  os << "strategy: " << (s.strategy.empty() ? "(not recorded)" : s.strategy) << " = "
     << (what.empty() ? "one rank's work on every rank" : what) << "\n";
  os << "mesh:";
  int devices = 1;
  for (size_t i = 0; i < s.meshAxes.size(); ++i) {
    os << (i ? " x " : " ") << s.meshAxes[i].first << "=" << s.meshAxes[i].second;
    devices *= s.meshAxes[i].second;
  }
  os << " (" << plural(devices, "rank", "ranks") << ", numbered row-major";
  if (s.meshAxes.size() == 2 && s.meshAxes[0].first == "dp" && s.meshAxes[1].first == "tp")
    os << ": rank = dp index · " << s.meshAxes[1].second << " + tp index";
  os << ")\n";
  for (const auto &[axis, size] : s.meshAxes) {
    const std::string head = "  " + axis + "=" + std::to_string(size) + ": ";
    const std::string indent = "    ";
    if (axis == "dp") {
      if (size > 1)
        wrap(os, head, indent,
             "data parallelism over the " + std::to_string(size) +
                 " ranks of a dp group, each with its own rows of the batch; " +
                 std::string(stageName) + ": " + stageDetail);
      else
        wrap(os, head, indent, "no data parallelism: every rank takes the whole batch");
    } else if (axis == "tp") {
      const uint64_t replicated = s.trainedTensors - s.trainedSplitTensors;
      if (size > 1)
        wrap(os, head, indent,
             "tensor parallelism: " +
                 plural(s.trainedSplitTensors, "trained parameter", "trained parameters") +
                 " cut into " + std::to_string(size) + " blocks, one per rank of a tp group (" +
                 std::to_string(replicated) + " replicated on every rank); the ranks of a tp " +
                 "group take the same batch rows, and the partial activations of the split " +
                 "layers (and their gradients) are all-reduced over tp");
      else
        wrap(os, head, indent, "no tensor parallelism");
    } else {
      wrap(os, head, indent, "(no description)");
    }
  }
  if (!s.groups.empty()) {
    os << "groups (every collective runs over one of them";
    bool world = false;
    if (!s.ranks.empty())
      for (const PlanGroupComm &g : s.ranks.front().comm.byGroup)
        world |= g.group == "world" && g.calls > 0;
    os << (world ? ", or over the whole world" : "; none over the whole world") << "):\n";
    for (const PlanGroup &g : s.groups) {
      uint64_t calls = 0;
      if (!s.ranks.empty())
        for (const PlanGroupComm &c : s.ranks.front().comm.byGroup)
          if (c.group == g.name)
            calls = c.calls;
      std::string axes;
      for (size_t i = 0; i < g.axes.size(); ++i)
        axes += (i ? " x " : "") + g.axes[i];
      wrap(os, "  " + g.name + ": ", "    ",
           plural(static_cast<uint64_t>(g.size), "rank", "ranks") + " along " + axes + ": " +
               rankLists(g.members) + "; " + plural(calls, "collective", "collectives") +
               " per step");
    }
  }
  if (s.globalBatchRows > 0) {
    // Ranks with the same rows, in order of their first rank.
    std::vector<std::pair<int64_t, int64_t>> slices;
    std::vector<std::vector<int>> byRows;
    for (const PlanRank &r : s.ranks) {
      std::pair<int64_t, int64_t> slice{r.batchBegin, r.batchRows};
      auto it = std::find(slices.begin(), slices.end(), slice);
      if (it == slices.end()) {
        slices.push_back(slice);
        byRows.push_back({r.rank});
      } else {
        byRows[it - slices.begin()].push_back(r.rank);
      }
    }
    std::string line =
        "batch: " + std::to_string(s.globalBatchRows) + " rows per step, split over dp:";
    for (size_t i = 0; i < slices.size(); ++i)
      line += std::string(i ? ";" : "") + " " + formatRankSet(byRows[i]) + ": rows [" +
              std::to_string(slices[i].first) + ", " +
              std::to_string(slices[i].first + slices[i].second) + ")";
    wrap(os, "", "  ", line + (tp > 1 ? " (the ranks of a tp group take the same rows)" : ""));
  }
}

void formatMesh(const PlanSummary &s, std::ostringstream &os) {
  os << "== Mesh and strategy\n";
  if (s.hasMesh())
    formatMeshAxes(s, os);
  else
    formatDataParallelMesh(s, os);
  os << "\n";
}

// A sharding cell of the parameter table. On a mesh, the spec ("[{tp}, {}] + flat/dp") and the
// flat shards' padding when there is some; without one, PlanSharding::text() as always.
std::string shardingCell(const PlanSummary &s, const PlanSharding &sharding) {
  if (!s.hasMesh())
    return sharding.text();
  std::string cell = sharding.spec();
  if (sharding.paddingElements > 0)
    cell += " (padding " + std::to_string(sharding.paddingElements) + ")";
  return cell;
}

std::string stateShardingText(const PlanSummary &s, const PlanParameter &p) {
  if (p.optimizerState.empty())
    return "-";
  std::string first = shardingCell(s, p.optimizerState.front().sharding);
  for (const PlanTensor &t : p.optimizerState)
    if (shardingCell(s, t.sharding) != first)
      return std::to_string(p.optimizerState.size()) + " x mixed";
  return std::to_string(p.optimizerState.size()) + " x " + first;
}

// How tensor parallelism divides Ψ: per-rank parameter bytes follow Ψ_split/t + Ψ_replicated.
void formatTensorParallelSplit(const PlanSummary &s, std::ostringstream &os) {
  const int tp = s.axisSize("tp");
  const uint64_t splitPerRank = s.trainedRankElements - s.trainedReplicatedElements;
  const uint64_t replicated = s.trainedTensors - s.trainedSplitTensors;
  wrap(os, "  ", "    ",
       "tp split: " + plural(s.trainedSplitTensors, "trained parameter", "trained parameters") +
           " cut into " + std::to_string(tp) + " blocks, Ψ_split = " +
           std::to_string(s.trainedSplitElements) + " elements (" + std::to_string(splitPerRank) +
           " per rank); whole on every tp rank: " + std::to_string(replicated) +
           " (replicated), Ψ_replicated = " + std::to_string(s.trainedReplicatedElements) +
           " elements");
  wrap(os, "  ", "    ",
       "per rank before ZeRO, with t = " + std::to_string(tp) +
           ": Ψ_rank = Ψ_split/t + Ψ_replicated = " + std::to_string(splitPerRank) + " + " +
           std::to_string(s.trainedReplicatedElements) + " = " +
           std::to_string(s.trainedRankElements) +
           " trained elements; elements are the whole tensors', bytes/rank the rank's block or "
           "shard");
}

void formatParameters(const PlanSummary &s, std::ostringstream &os) {
  os << "== Parameters: " << s.trainedTensors << " trained (Ψ = " << s.trainedElements
     << " elements), " << s.frozenTensors << (s.mode == "train" ? " frozen" : " weights") << " ("
     << s.frozenElements << " elements); bytes per rank\n";
  if (s.parameters.empty()) {
    os << "  (none)\n\n";
    return;
  }
  Table t("lllrlrlr");
  t.add({"name", "kind", "shape", "elements", "sharding", "bytes/rank", "optimizer state",
         "state bytes/rank"});
  uint64_t elements = 0, bytes = 0, stateBytes = 0;
  for (const PlanParameter &p : s.parameters) {
    const char *kind = p.trained ? "trained" : s.mode == "train" ? "frozen" : "weight";
    t.add({p.tensor.name, kind, shapeString(p.tensor.globalShape),
           std::to_string(p.tensor.elements), shardingCell(s, p.tensor.sharding),
           std::to_string(p.tensor.bytesPerRank), stateShardingText(s, p),
           p.optimizerState.empty() ? "-" : std::to_string(p.optimizerStateBytesPerRank())});
    elements += static_cast<uint64_t>(p.tensor.elements);
    bytes += p.tensor.bytesPerRank;
    stateBytes += p.optimizerStateBytesPerRank();
  }
  t.add({"total", "", "", std::to_string(elements), "", std::to_string(bytes), "",
         std::to_string(stateBytes)});
  t.print(os, "  ");
  if (s.hasMesh() && s.trainedTensors > 0)
    formatTensorParallelSplit(s, os);
  os << "\n";
}

void formatMemoryPerRank(const PlanSummary &s, std::ostringstream &os) {
  os << "== Memory per rank (bytes; the arena by buffer role where it peaks, see the rank "
        "sections below)\n";
  std::string right(1 + s.memoryGroups.size(), 'r');
  right[0] = 'l';
  Table t(right);
  std::vector<const PlanRank *> reps;
  std::vector<std::string> header = {""};
  for (const std::vector<int> &g : s.memoryGroups) {
    reps.push_back(&s.ranks[g.front()]);
    header.push_back(formatRankSet(g));
  }
  t.add(header);
  auto row = [&](const std::string &label, auto value) {
    std::vector<std::string> cells = {label};
    for (const PlanRank *r : reps)
      cells.push_back(value(*r));
    t.add(cells);
  };
  auto bytesRow = [&](const std::string &label, auto value) {
    row(label, [&](const PlanRank &r) { return bytesCell(value(r)); });
  };
  if (s.globalBatchRows > 0)
    row("batch rows (of " + std::to_string(s.globalBatchRows) + ")",
        [](const PlanRank &r) { return std::to_string(r.batchRows); });
  bytesRow("planned peak", [](const PlanRank &r) { return r.plannedPeakBytes; });
  bytesRow("  arena", [](const PlanRank &r) { return r.memory.arena; });
  for (program::BufferRole role : kRoleOrder) {
    bool any = false;
    for (const PlanRank *r : reps)
      any |= r->memory.arenaLiveByRole[static_cast<size_t>(role)] > 0;
    if (any || role == program::ROLE_ACTIVATION)
      bytesRow(std::string("    ") + runtime::bufferRoleName(role), [role](const PlanRank &r) {
        return r.memory.arenaLiveByRole[static_cast<size_t>(role)];
      });
  }
  bytesRow("    unused", [](const PlanRank &r) { return r.memory.arenaUnused; });
  bytesRow("  weights (frozen parameters, constants)",
           [](const PlanRank &r) { return r.memory.weights; });
  bytesRow("  workspace", [](const PlanRank &r) {
    return r.memory.workspace + r.memory.commWorkspace;
  });
  bytesRow("  step inputs (host)", [](const PlanRank &r) { return r.memory.stepInputs; });
  bytesRow("  step outputs (host)", [](const PlanRank &r) { return r.memory.stepOutputs; });
  row("model state stored:", [](const PlanRank &) { return std::string(); });
  bytesRow("  trained parameters",
           [](const PlanRank &r) { return r.modelState.trainedParameterBytes; });
  bool frozen = false, whole = false;
  for (const PlanRank *r : reps) {
    frozen |= r->modelState.frozenParameterBytes > 0;
    whole |= r->modelState.wholeGradientBytes != r->modelState.gradientBytes;
  }
  if (frozen)
    bytesRow("  frozen parameters (weights)",
             [](const PlanRank &r) { return r.modelState.frozenParameterBytes; });
  bytesRow("  gradients the optimizer reads",
           [](const PlanRank &r) { return r.modelState.gradientBytes; });
  if (whole)
    bytesRow("  gradients before reduce-scatter",
             [](const PlanRank &r) { return r.modelState.wholeGradientBytes; });
  bytesRow("  optimizer state", [](const PlanRank &r) { return r.modelState.optimizerStateBytes; });
  bytesRow("communication sent per step", [](const PlanRank &r) { return r.comm.bytesSent; });
  t.print(os, "  ");
  os << "\n";
}

std::string perRankText(uint64_t paddingElements, int ranks) {
  return decimal(4.0 * static_cast<double>(paddingElements) / ranks);
}

void formatZero(const PlanSummary &s, std::ostringstream &os) {
  const PlanZeroAccounting &z = s.zero;
  if (z.psi == 0)
    return;
  const int n = z.ranks;
  const char *kind = z.mixedPrecision ? "mixed precision" : "fp32";
  if (s.hasMesh()) {
    os << "== ZeRO accounting: model state per rank, " << kind << " (Ψ_rank = " << z.psiRank
       << " trained elements per rank, N = dp = " << n << ")\n";
    wrap(os, "  ", "    ",
         "Ψ_rank = Ψ_split/t + Ψ_replicated = " + std::to_string(z.psiSplit) + "/" +
             std::to_string(z.tp) + " + " + std::to_string(z.psiReplicated) +
             ": the trained elements of a rank's tp blocks, which ZeRO shards over dp (each " +
             "block padded to a multiple of N)");
  } else {
    os << "== ZeRO accounting: model state per rank, " << kind << " (Ψ = " << z.psi
       << " trained elements, N = " << n << ")\n";
  }
  const std::string state =
      z.stateBytesPerElement > 0
          ? std::to_string(z.stateBytesPerElement)
          : "O = " + std::to_string(z.wholeOptimizerStateBytes) + " bytes in all";
  if (z.mixedPrecision)
    wrap(os, "  ", "    ",
         "bytes per element: " + std::to_string(z.parameterBytesPerElement) +
             " of 16-bit working parameters, " + std::to_string(z.gradientBytesPerElement) +
             " of gradients as they are reduced (--reduce-dtype), " + state +
             " of optimizer state with the f32 master weights (ZeRO's 2Ψ + 2Ψ + 12Ψ for "
             "AdamW); this bundle's parameters are the working copies the products read "
             "(whole at stages 0-2, the shards gathered per unit at stage 3; a parameter read "
             "in f32, such as a LayerNorm scale, is gathered in f32), its optimizer state the "
             "f32 master weights and the state; * marks this bundle's stage");
  else
    wrap(os, "  ", "    ",
         "4 bytes per element of parameters and of gradients, " +
             (z.stateBytesPerElement > 0
                  ? std::to_string(z.stateBytesPerElement) + " of optimizer state"
                  : "O = " + std::to_string(z.wholeOptimizerStateBytes) +
                        " bytes of optimizer state in all") +
             "; * marks this bundle's stage");
  Table t("llrrrr");
  t.add({"stage", "formula", "parameters", "gradients", "optimizer state", "total"});
  for (const PlanZeroStage &row : z.stages)
    t.add({(row.stage == z.stage ? "* " : "  ") + row.label, row.formula,
           std::to_string(row.parameterBytes), std::to_string(row.gradientBytes),
           std::to_string(row.optimizerStateBytes), std::to_string(row.totalBytes)});
  t.add({"  this bundle", "(rank 0)", std::to_string(z.parameterBytes),
         std::to_string(z.gradientBytes), std::to_string(z.optimizerStateBytes),
         std::to_string(z.totalBytes)});
  t.print(os, "  ");
  if (z.stage >= 0 && z.stage <= 3) {
    // The formula without rounding: the whole bytes of each part, divided by N where sharded.
    const double paramBytes = static_cast<double>(z.parameterBytesPerElement * z.psiRank);
    const double gradBytes = static_cast<double>(z.gradientBytesPerElement * z.psiRank);
    const double exact = (z.stage >= 3 ? paramBytes / n : paramBytes) +
                         (z.stage >= 2 ? gradBytes / n : gradBytes) +
                         (z.stage >= 1 ? static_cast<double>(z.wholeOptimizerStateBytes) / n
                                       : static_cast<double>(z.wholeOptimizerStateBytes));
    const double diff = static_cast<double>(z.totalBytes) - exact;
    os << "  this bundle holds " << z.totalBytes << " bytes, the formula "
       << z.stages[static_cast<size_t>(z.stage)].formula << " gives " << decimal(exact) << ": "
       << (diff >= 0 ? "+" : "") << decimal(diff) << " bytes\n";
    const int64_t padding =
        z.parameterPaddingElements + z.gradientPaddingElements + z.optimizerStatePaddingElements;
    if (padding > 0)
      wrap(os, "  ", "    ",
           std::string(s.hasMesh() ? "padding of the flat shards (a tp block of n elements is "
                                     "stored as ceil(n/N) per rank of its dp group): "
                                   : "padding of the flat shards (a tensor of n elements is "
                                     "stored as ceil(n/N) per rank): ") +
               std::to_string(z.parameterPaddingElements) + " parameter, " +
               std::to_string(z.gradientPaddingElements) + " gradient and " +
               std::to_string(z.optimizerStatePaddingElements) + " optimizer-state elements " +
               (s.hasMesh() ? "over a dp group's ranks" : "over all ranks") + " = " +
               perRankText(static_cast<uint64_t>(padding), n) + " bytes per rank");
    else
      os << (s.hasMesh() ? "  no padding: every sharded block divides evenly by N\n"
                         : "  no padding: every sharded tensor divides evenly by N\n");
  }
  wrap(os, "  ", "    ",
       std::string(z.stage <= 1
                       ? "gradients: whole until they are reduced (stage 0: all-reduced; stage "
                         "1: reduce-scattered after the backward pass)"
                       : "gradients: the shards the optimizer reads (whole gradients live only "
                         "until their bucket or unit is reduce-scattered)") +
           (z.mixedPrecision ? "; the optimizer reads them in f32, widened after a 16-bit "
                               "reduction, which the formula's 16-bit gradients do not count"
                             : ""));
  os << "\n";
}

// "14 all-reduces, 1 reduce-scatter": what a group's collectives are.
std::string callsText(const std::vector<PlanCommTotal> &totals) {
  std::string out;
  for (const PlanCommTotal &t : totals) {
    std::string kind = t.kind;
    std::replace(kind.begin(), kind.end(), '_', '-');
    out += (out.empty() ? "" : ", ") + plural(t.calls, kind.c_str(), (kind + "s").c_str());
  }
  return out.empty() ? "no collectives" : out;
}

// Bytes sent per group and kind, beside the ring algorithms' volume for each op's group size.
void formatCommByGroup(const PlanComm &comm, std::ostringstream &os) {
  wrap(os, "  ", "    ",
       "sent per rank and step, by group and kind (ring algorithms on a payload of S bytes over "
       "the n ranks of the op's group: all-reduce 2S(n−1)/n, reduce-scatter and all-gather "
       "S(n−1)/n):");
  Table t("lrlrrrr");
  t.add({"group", "n", "kind", "calls", "payload bytes", "theory", "sent"});
  for (const PlanGroupComm &g : comm.byGroup) {
    const std::string n = std::to_string(g.numRanks);
    if (g.totals.empty())
      t.add({g.group, n, "(none)", "0", "0", "0", "0"});
    for (const PlanCommTotal &total : g.totals)
      t.add({g.group, n, total.kind, std::to_string(total.calls),
             total.kind == "shard_slice" ? "local" : std::to_string(total.payloadBytes),
             std::to_string(total.theoryBytes), std::to_string(total.bytesSent)});
    if (g.totals.size() > 1) {
      uint64_t payload = 0;
      for (const PlanCommTotal &total : g.totals)
        payload += total.payloadBytes;
      t.add({g.group, n, "all", std::to_string(g.calls), std::to_string(payload),
             std::to_string(g.theoryBytes), std::to_string(g.bytesSent)});
    }
  }
  t.print(os, "    ");
}

void formatComm(const PlanSummary &s, std::ostringstream &os) {
  if (s.ranks.empty())
    return;
  const PlanComm &comm = s.ranks.front().comm;
  bool same = true;
  for (const PlanRank &r : s.ranks)
    same &=
        r.comm.bytesSent == comm.bytesSent && r.comm.collectives.size() == comm.collectives.size();
  os << "== Communication per step (rank 0; "
     << (same ? "every rank sends the same" : "other ranks: see Memory per rank");
  if (s.hasMesh()) {
    os << "; groups:";
    for (size_t i = 0; i < comm.byGroup.size(); ++i)
      os << (i ? ", " : " ") << comm.byGroup[i].group << " = "
         << plural(static_cast<uint64_t>(comm.byGroup[i].numRanks), "rank", "ranks");
    os << ")\n";
  } else {
    os << "; group dp = " << s.worldSize << " ranks)\n";
  }
  if (comm.collectives.empty()) {
    os << "  no collectives\n";
  } else {
    Table t("rlllrrrrl");
    t.add({"op", "kernel", "group", "bucket/unit", "tensors", "elements", "payload bytes",
           "sent/rank", "name"});
    for (const PlanCollective &c : comm.collectives) {
      std::string tag = c.bucket >= 0 ? "bucket " + std::to_string(c.bucket) : "";
      if (!c.unit.empty())
        tag += (tag.empty() ? "unit " : ", unit ") + c.unit;
      t.add({"#" + std::to_string(c.opIndex), c.kind, c.group, tag.empty() ? "-" : tag,
             std::to_string(c.tensors), std::to_string(c.elements),
             c.kind == "shard_slice" ? "local" : std::to_string(c.payloadBytes),
             std::to_string(c.bytesSent), "'" + c.name + "'"});
    }
    t.print(os, "  ");
  }
  if (s.hasMesh()) {
    formatCommByGroup(comm, os);
  } else {
    os << "  sent per rank and step:\n";
    for (const PlanCommTotal &total : comm.totals) {
      os << "    " << total.kind << ": " << plural(total.calls, "call", "calls");
      if (total.kind == "shard_slice")
        os << ", local (nothing sent)\n";
      else
        os << ", " << exactBytes(total.bytesSent) << "\n";
    }
  }
  os << "    total: " << exactBytes(comm.bytesSent);
  if (comm.matchesPlan())
    os << " (= planned_comm_bytes)\n";
  else
    os << "\n    warning: planned_comm_bytes is " << comm.plannedBytes
       << ", the collectives above add up to " << comm.bytesSent << "\n";
  const PlanZeroAccounting &z = s.zero;
  const PlanCommTheory &theory = s.commTheory;
  // With a mesh the theory is that of the dp groups: the other groups' traffic (tensor
  // parallelism's activations) does not follow Ψ.
  uint64_t compared = comm.bytesSent;
  if (s.hasMesh()) {
    compared = 0;
    for (const PlanGroupComm &g : comm.byGroup)
      if (g.group == "dp")
        compared = g.bytesSent;
  }
  if (z.psi > 0 && z.ranks > 1) {
    const std::string &psi = z.psiName;
    if (s.hasMesh())
      os << "  theory of the dp traffic (ring algorithms, fp32, Ψ_rank = " << z.psiRank
         << ", N = " << z.ranks << ", no padding):\n";
    else
      os << "  theory (ring algorithms, fp32, Ψ = " << z.psi << ", N = " << s.worldSize
         << ", no padding):\n";
    // Ratios against DP's exact (unrounded) 2Ψ·4(N−1)/N.
    const double n = static_cast<double>(z.ranks);
    const double dpExact = 8.0 * static_cast<double>(z.psiRank) * (n - 1) / n;
    auto times = [&](double bytes) {
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%.2fx DP", dpExact > 0 ? bytes / dpExact : 0.0);
      return std::string(ratio);
    };
    Table t("lllrl");
    t.add({"DP", "all-reduce of the gradients", "2" + psi + "·4(N−1)/N",
           std::to_string(theory.dpAllReduceBytes) + " bytes", ""});
    if (z.stage == 1 || z.stage == 2)
      t.add({"ZeRO-" + std::to_string(z.stage), "reduce-scatter + all-gather", theory.stageFormula,
             std::to_string(theory.stageBytes) + " bytes", times(dpExact)});
    else if (z.stage >= 3)
      t.add({"ZeRO-3", "all-gather x2 (forward, backward) + reduce-scatter", theory.stageFormula,
             std::to_string(theory.stageBytes) + " bytes", times(1.5 * dpExact)});
    t.add({"this bundle", s.hasMesh() ? "its dp collectives" : "the collectives above", "",
           std::to_string(compared) + " bytes", times(static_cast<double>(compared))});
    t.print(os, "    ");
    const int64_t rest = static_cast<int64_t>(compared) - static_cast<int64_t>(theory.stageBytes);
    wrap(os, "  ", "    ",
         "this bundle - theory: " + std::string(rest >= 0 ? "+" : "") + std::to_string(rest) +
             " bytes (padding to multiples of N; the all-reduces of the loss and of the "
             "gradient norm)");
  }
  if (s.hasMesh())
    for (const PlanGroupComm &g : comm.byGroup)
      if (g.group != "dp" && g.calls > 0)
        wrap(os, "  ", "    ",
             g.group + ": " + exactBytes(g.bytesSent) + " per step in " + callsText(g.totals) +
                 (g.group == "tp" ? " of partial activations and their gradients (they follow "
                                    "the batch and the layers' widths, not Ψ)"
                                  : "") +
                 (z.psi > 0 && z.ranks > 1 ? "; not part of the theory above" : ""));
  os << "\n";
}

// Whether two programs run the same kernels, in the same order, on the same nodes.
bool sameOpList(const program::Program &a, const program::Program &b) {
  if (a.ops_size() != b.ops_size())
    return false;
  for (int i = 0; i < a.ops_size(); ++i)
    if (a.ops(i).kernel() != b.ops(i).kernel() || a.ops(i).name() != b.ops(i).name())
      return false;
  return true;
}

void formatRanks(const program::Bundle &bundle, const PlanSummary &s, std::ostringstream &os) {
  const int world = bundle.world_size();
  std::optional<program::Program> listed;
  for (const std::vector<int> &group : s.programGroups) {
    const program::Program p = planProgramOfRank(bundle, s.ranks[group.front()].rank);
    os << "== rank " << p.rank() << " of " << world;
    if (group.size() > 1) {
      std::vector<int> others(group.begin() + 1, group.end());
      os << " (" << formatRankSet(others)
         << (others.size() > 1 ? " run the same program on their own"
                               : " runs the same program on its own")
         << (s.axisSize("tp") > 1 ? " batch rows, tp blocks and shards)"
                                  : " batch rows and shards)");
    }
    os << "\n";
    if (p.mesh_coordinate_size() > 0) {
      std::vector<int> coordinate(p.mesh_coordinate().begin(), p.mesh_coordinate().end());
      os << "mesh: " << coordinateText(s, coordinate) << "; groups:";
      for (int i = 0; i < p.groups_size(); ++i) {
        std::vector<int> ranks(p.groups(i).ranks().begin(), p.groups(i).ranks().end());
        os << (i ? ", " : " ") << p.groups(i).name() << " " << rankLists({ranks});
      }
      os << "\n";
    }
    if (p.global_batch_rows() > 0)
      os << "batch: rows [" << p.batch_begin() << ", " << p.batch_begin() + p.batch_rows()
         << ") of " << p.global_batch_rows() << "\n";
    os << "communication: " << exactBytes(p.planned_comm_bytes())
       << " sent per step (planned_comm_bytes)\n";
    formatProgramBody(p, os);
    if (listed && sameOpList(*listed, p)) {
      os << "\nprogram: the same " << p.ops_size() << " kernel calls as rank " << listed->rank()
         << ", on buffers sized for this rank (program.pb has their offsets)\n";
    } else {
      formatOps(p, os);
      if (!listed)
        listed = p;
    }
    os << "\n";
  }
}

} // namespace

std::string formatPlan(const program::Bundle &bundle, const PlanNotes &notes) {
  std::ostringstream os;
  os << "shardc plan for " << bundle.source_model() << "\n";
  const bool multiRank = bundle.world_size() > 1 || bundle.programs_size() > 1;
  os << "mode: " << bundle.mode() << ", world size: " << bundle.world_size() << ", strategy: ";
  if (multiRank)
    os << (bundle.strategy().empty() ? "(not recorded)" : bundle.strategy()) << "\n";
  else if (bundle.strategy().empty())
    os << "single rank (no sharding)\n";
  else
    os << bundle.strategy() << " (single rank, no sharding)\n";
  if (!notes.precision.empty())
    os << "precision: " << notes.precision << "\n";
  if (bundle.programs_size() > 0) {
    const PlanCastPoints c = castPointsOf(bundle.programs(0));
    if (c.any())
      os << "cast points (rank 0): " << c.roundings << " roundings to 16 bits ("
         << c.parameterRoundings << " of trained parameters or their shards: the working "
         << "copies), " << c.widenings << " widenings to f32; " << c.productsWith16BitOperands
         << " of " << c.products << " matrix products read 16-bit operands, "
         << c.productsWith16BitResults << " write 16-bit results (the op listing names each "
         << "cast)\n";
  }
  if (!notes.microBatchLoop.empty())
    os << "micro-batches: " << notes.microBatchLoop << "\n";
  if (bundle.weights_file().empty())
    os << "weights: absent (planning only; this bundle cannot be run)\n";
  os << "\n";
  if (!notes.remat.empty())
    os << "remat: " << notes.remat.front() << "\n";
  if (!multiRank) {
    formatStrategyDecision(notes.strategyDecision, os);
    formatPrediction(notes, os);
    formatTrainedSet(notes, os);
    formatRemat(notes.remat, os);
    for (const program::Program &p : bundle.programs()) {
      os << "== rank " << p.rank() << " of " << p.world_size() << "\n";
      formatProgramBody(p, os);
      formatOps(p, os);
    }
    return os.str();
  }
  PlanSummary s = summarizePlan(bundle, notes);
  for (const std::string &warning : s.warnings)
    os << "warning: " << warning << "\n";
  if (!s.warnings.empty())
    os << "\n";
  formatTrainedSet(notes, os);
  formatRemat(notes.remat, os);
  formatMesh(s, os);
  formatParameters(s, os);
  formatLayoutDecisions(s.layoutDecisions, os);
  formatNoteLines("Resharding (ops that need the batch whole: their operands all-gathered and "
                  "their results sliced back to each rank's rows, or exchanged into blocks of a "
                  "dimension the op treats independently)",
                  s.reshardings, os);
  formatNoteLines("Pipeline stages (rank r runs stage r % pp; F/B: a microbatch's forward and "
                  "backward step; one transfer between steps)",
                  s.pipeline, os);
  formatMemoryPerRank(s, os);
  formatZero(s, os);
  formatComm(s, os);
  formatStrategyDecision(s.strategyDecision, os);
  formatPrediction(notes, os);
  formatRanks(bundle, s, os);
  return os.str();
}

} // namespace shardc
