#include "stablehlo_signature.h"

#include <cstring>
#include <string>
#include <utility>

#include "driver_error.h"

using axon::common::fail;

namespace axon::pjrt {
namespace {

ArrayType element_type(const std::string& name) {
  static const std::pair<const char*, std::pair<BufferType, std::size_t>> kTypes[] = {
      {"i1", {kPred, 1}},
      {"i8", {kS8, 1}},
      {"i16", {kS16, 2}},
      {"i32", {kS32, 4}},
      {"i64", {kS64, 8}},
      {"ui8", {kU8, 1}},
      {"ui16", {kU16, 2}},
      {"ui32", {kU32, 4}},
      {"ui64", {kU64, 8}},
      {"f16", {kF16, 2}},
      {"bf16", {kBF16, 2}},
      {"f32", {kF32, 4}},
      {"f64", {kF64, 8}},
      {"complex<f32>", {kC64, 8}},
      {"complex<f64>", {kC128, 16}},
  };
  for (const auto& [text, type] : kTypes) {
    if (name == text) return ArrayType{type.first, type.second, {}};
  }
  fail(AXON_ERROR_INVALID_VALUE, "element type ", name, " of @main's signature is not one the driver binds");
}

// `tensor<2x3xf32>` at `text[position]` onward; advances `position` past it.
ArrayType read_tensor_type(const std::string& text, std::size_t& position) {
  const std::size_t open = position + std::strlen("tensor<");
  int depth = 1;
  std::size_t close = open;
  while (close < text.size() && depth > 0) {
    if (text[close] == '<') ++depth;
    if (text[close] == '>') --depth;
    ++close;
  }
  const std::string inside = text.substr(open, close - 1 - open);
  position = close;
  ArrayType type;
  std::size_t start = 0;
  for (std::size_t x = inside.find('x'); x != std::string::npos && inside.compare(start, 7, "complex") != 0;
       x = inside.find('x', start)) {
    const std::string dim = inside.substr(start, x - start);
    if (dim.empty() || dim.find_first_not_of("0123456789") != std::string::npos) break;  // not a dimension
    type.dims.push_back(std::stoll(dim));
    start = x + 1;
  }
  ArrayType element = element_type(inside.substr(start));
  element.dims = std::move(type.dims);
  return element;
}

}  // namespace

std::vector<ArrayType> tensor_types(const std::string& text, std::size_t begin, std::size_t end) {
  std::vector<ArrayType> types;
  for (std::size_t at = text.find("tensor<", begin); at != std::string::npos && at < end;
       at = text.find("tensor<", at)) {
    types.push_back(read_tensor_type(text, at));
  }
  return types;
}

Signature main_signature(const std::string& text) {
  const std::size_t main = text.find("@main(");
  const std::size_t arrow = main == std::string::npos ? main : text.find("->", main);
  const std::size_t body = arrow == std::string::npos ? arrow : text.find('{', arrow);
  if (body == std::string::npos) {
    fail(AXON_ERROR_INVALID_VALUE, "expected a module with a public func.func @main(...) -> (...) {...}");
  }
  return Signature{text.substr(main, body - main), arrow - main};
}

std::string with_results_in_place(const std::string& text) {
  const Signature signature = main_signature(text);
  const std::size_t main = text.find("@main(");
  const std::size_t arrow = main + signature.arrow;
  const std::size_t body = main + signature.text.size();
  const std::size_t arguments_end = text.rfind(')', arrow);  // the argument list's closing parenthesis
  bool first = text.find_first_not_of(" \t\n", main + std::strlen("@main(")) == arguments_end;
  std::string extra;
  int result = 0;
  for (std::size_t at = text.find("tensor<", arrow); at != std::string::npos && at < body;
       at = text.find("tensor<", at)) {
    const std::size_t start = at;
    read_tensor_type(text, at);
    extra += first ? "" : ", ";
    extra += "%axon_result_" + std::to_string(result) + ": " + text.substr(start, at - start) +
             " {tf.aliasing_output = " + std::to_string(result) + " : i32}";
    first = false;
    ++result;
  }
  return text.substr(0, arguments_end) + extra + text.substr(arguments_end);
}

}  // namespace axon::pjrt
