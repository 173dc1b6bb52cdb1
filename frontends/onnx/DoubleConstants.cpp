//===- DoubleConstants.cpp --------------------------------------------------------------===//
#include "frontends/onnx/DoubleConstants.h"

#include "frontends/onnx/ImportLimits.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Endian.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace shardc::onnx_import {

namespace {

bool isCastToFloat(const onnx::NodeProto &node) {
  if (node.op_type() != "Cast")
    return false;
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == "to")
      return attr.i() == onnx::TensorProto::FLOAT;
  return false;
}

// The float64 values of `tensor` (raw_data or double_data), or false when they do not match
// its shape.
bool readDoubles(const onnx::TensorProto &tensor, std::vector<double> &values) {
  std::string why;
  std::optional<int64_t> elements = checkedElementCount(
      llvm::SmallVector<int64_t>(tensor.dims().begin(), tensor.dims().end()), why);
  if (!elements)
    return false;
  const int64_t count = *elements;
  if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    if (raw.size() != static_cast<size_t>(count) * sizeof(double))
      return false;
    values.resize(count);
    for (int64_t i = 0; i < count; ++i)
      values[i] = llvm::support::endian::read<double, llvm::endianness::little>(
          raw.data() + i * sizeof(double));
    return true;
  }
  if (tensor.double_data_size() != count)
    return false;
  values.assign(tensor.double_data().begin(), tensor.double_data().end());
  return true;
}

// Rewrites the float64 `tensor` as float32, each value rounded to nearest; false (and left as
// it is, for the importer to report) when its values cannot be read.
bool narrowToFloat(onnx::TensorProto &tensor) {
  std::vector<double> values;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL || !readDoubles(tensor, values))
    return false;
  std::string raw(values.size() * sizeof(float), '\0');
  for (size_t i = 0; i < values.size(); ++i)
    llvm::support::endian::write<float, llvm::endianness::little>(
        raw.data() + i * sizeof(float), static_cast<float>(values[i]));
  tensor.clear_double_data();
  tensor.set_raw_data(raw);
  tensor.set_data_type(onnx::TensorProto::FLOAT);
  return true;
}

// Every name read inside the subgraphs of `node` (If branches, loop bodies), at any depth.
void collectSubgraphReads(const onnx::NodeProto &node, std::set<std::string> &names) {
  auto readAll = [&](const onnx::GraphProto &graph) {
    for (const onnx::NodeProto &inner : graph.node()) {
      names.insert(inner.input().begin(), inner.input().end());
      collectSubgraphReads(inner, names);
    }
  };
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (attr.has_g())
      readAll(attr.g());
    for (const onnx::GraphProto &graph : attr.graphs())
      readAll(graph);
  }
}

bool isDoubleConstant(const onnx::NodeProto &node) {
  return node.op_type() == "Constant" && node.output_size() == 1 && node.attribute_size() == 1 &&
         node.attribute(0).name() == "value" && node.attribute(0).has_t() &&
         node.attribute(0).t().data_type() == onnx::TensorProto::DOUBLE;
}

// A Where that reads `name` as one branch while its other branch is no float64 constant: the
// exporter's trace of torch.where(mask, python_float, tensor), which PyTorch computes in the
// tensor's dtype (a Python scalar does not promote). Narrowed, the branches agree; were the
// other branch float64 after all, the importer refuses that value by name.
bool isWhereBranchBesideTensor(const onnx::NodeProto &node, const std::string &name,
                               const std::set<std::string> &doubleConstants) {
  if (node.op_type() != "Where" || node.input_size() != 3)
    return false;
  for (int branch : {1, 2})
    if (node.input(branch) == name && node.input(3 - branch) != name &&
        !doubleConstants.count(node.input(3 - branch)))
      return true;
  return false;
}

} // namespace

void narrowDoubleConstantsCastToFloat(onnx::GraphProto &graph) {
  std::map<std::string, std::vector<const onnx::NodeProto *>> readers;
  for (const onnx::NodeProto &node : graph.node())
    for (const std::string &input : node.input())
      readers[input].push_back(&node);
  // Values a subgraph reads, or that leave the graph, keep their type.
  std::set<std::string> kept;
  for (const onnx::ValueInfoProto &output : graph.output())
    kept.insert(output.name());
  for (const onnx::NodeProto &node : graph.node())
    collectSubgraphReads(node, kept);

  std::set<std::string> doubleConstants;
  for (const onnx::NodeProto &node : graph.node())
    if (isDoubleConstant(node))
      doubleConstants.insert(node.output(0));
  std::set<std::string> narrowed;
  for (onnx::NodeProto &node : *graph.mutable_node()) {
    if (!isDoubleConstant(node))
      continue;
    const std::string &name = node.output(0);
    auto it = readers.find(name);
    if (kept.count(name) || it == readers.end() ||
        !std::all_of(it->second.begin(), it->second.end(), [&](const onnx::NodeProto *reader) {
          return isCastToFloat(*reader) ||
                 isWhereBranchBesideTensor(*reader, name, doubleConstants);
        }))
      continue;
    if (narrowToFloat(*node.mutable_attribute(0)->mutable_t()))
      narrowed.insert(name);
  }
  for (onnx::ValueInfoProto &info : *graph.mutable_value_info())
    if (narrowed.count(info.name()) && info.type().has_tensor_type())
      info.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
}

namespace {

bool isCastTo(const onnx::NodeProto &node, int type) {
  if (node.op_type() != "Cast")
    return false;
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == "to")
      return attr.i() == type;
  return false;
}

void setCastTo(onnx::NodeProto &node, int type) {
  for (onnx::AttributeProto &attr : *node.mutable_attribute())
    if (attr.name() == "to")
      attr.set_i(type);
}

} // namespace

std::vector<std::string> narrowFloat64Regions(onnx::GraphProto &graph) {
  std::vector<std::string> report;
  std::map<std::string, std::vector<int>> readers;
  for (int i = 0; i < graph.node_size(); ++i)
    for (const std::string &input : graph.node(i).input())
      readers[input].push_back(i);
  std::set<std::string> kept;
  for (const onnx::ValueInfoProto &output : graph.output())
    kept.insert(output.name());
  for (const onnx::NodeProto &node : graph.node())
    collectSubgraphReads(node, kept);

  // Grown from each Cast to float64 along its readers (nodes are in topological order), up to
  // the Casts to float32 that end it; float64 constants read by the region's nodes join it.
  std::vector<bool> taken(graph.node_size(), false);
  for (int start = 0; start < graph.node_size(); ++start) {
    if (taken[start] || !isCastTo(graph.node(start), onnx::TensorProto::DOUBLE))
      continue;
    std::set<int> nodes = {start}, exits;
    std::vector<int> work = {start};
    bool closed = true;
    while (!work.empty() && closed) {
      const onnx::NodeProto &node = graph.node(work.back());
      work.pop_back();
      for (const std::string &out : node.output()) {
        if (kept.count(out))
          closed = false;
        auto it = readers.find(out);
        if (it == readers.end())
          continue;
        for (int reader : it->second) {
          const onnx::NodeProto &r = graph.node(reader);
          if (isCastTo(r, onnx::TensorProto::FLOAT)) {
            exits.insert(reader);
          } else if (nodes.insert(reader).second) {
            // A second Cast to float64 inside the region widens nothing more.
            work.push_back(reader);
          }
        }
      }
    }
    if (!closed || exits.empty())
      continue;
    // The region's other float64 inputs: Casts to float64 (joined) and float64 constants.
    std::set<std::string> produced;
    for (int n : nodes)
      produced.insert(graph.node(n).output().begin(), graph.node(n).output().end());
    for (int i = 0; i < graph.node_size(); ++i)
      if (!nodes.count(i) && isDoubleConstant(graph.node(i))) {
        const std::string &c = graph.node(i).output(0);
        auto it = readers.find(c);
        if (it != readers.end() && !kept.count(c) &&
            std::all_of(it->second.begin(), it->second.end(),
                        [&](int r) { return nodes.count(r) != 0; }))
          nodes.insert(i);
      }
    // Narrow: the casts to float64 become casts to float32, the constants float32 values.
    for (int n : nodes) {
      onnx::NodeProto &node = *graph.mutable_node(n);
      taken[n] = true;
      if (isCastTo(node, onnx::TensorProto::DOUBLE)) {
        setCastTo(node, onnx::TensorProto::FLOAT);
      } else if (isDoubleConstant(node) &&
                 !narrowToFloat(*node.mutable_attribute(0)->mutable_t())) {
        continue;
      }
      produced.insert(node.output().begin(), node.output().end());
    }
    for (onnx::ValueInfoProto &info : *graph.mutable_value_info())
      if (produced.count(info.name()) && info.type().has_tensor_type() &&
          info.type().tensor_type().elem_type() == onnx::TensorProto::DOUBLE)
        info.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    auto named = [&](int n) {
      const std::string &name = graph.node(n).name();
      return "'" + (name.empty() ? graph.node(n).op_type() : name) + "'";
    };
    report.push_back("the float64 region from Cast " + named(start) + " to Cast " +
                     named(*exits.begin()) + " (" + std::to_string(nodes.size()) +
                     " nodes) is computed in float32");
  }
  return report;
}

} // namespace shardc::onnx_import
