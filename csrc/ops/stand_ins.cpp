#include "ops/stand_ins.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/StorageImpl.h>
#include <sys/mman.h>

#include <algorithm>
#include <type_traits>

#include "ops/argument_tensors.h"

namespace axon {
namespace {

// Whether an argument, by its schema name, holds indices into another
// tensor (`indices`, `index`, `max_indices`, ...). Its integral stand-in is
// zeros even when the others get the varied pattern. Why: a pattern index of
// 1 is out of range where the indexed dimension has one element, and some
// CPU kernels trust their indices: max_pool2d_with_indices_backward over 1x1
// planes added the last plane's gradient one element past the stand-in
// buffer and corrupted the host's heap. Kernels that check their indices
// raise on the pattern and then get zeros anyway (the fills are tried in
// turn); an index of 0 is in range of every nonempty dimension.
bool names_indices(const std::string& argument_name) {
  return argument_name.find("indices") != std::string::npos || argument_name.find("index") != std::string::npos;
}

constexpr Fill kSmallOrder[] = {Fill::kPattern, Fill::kZeros, Fill::kOnes};
constexpr Fill kLargeOrder[] = {Fill::kZeros, Fill::kOnes, Fill::kPattern};

// Below this, zeros come from the CPU allocator: a mapping of its own costs a
// system call and a page fault per page written.
constexpr size_t kMappedZerosBytes = size_t{1} << 20;

// The values kPattern gives, written in one pass: 0.5 + 0.25 * (i % 5) for
// floating and complex types (exact in each; real for complex), i % 2 for
// integral ones and bool.
template <typename T>
void write_pattern(T* data, int64_t elements) {
  for (int64_t i = 0; i < elements; ++i) {
    if constexpr (std::is_integral_v<T>) {
      data[i] = static_cast<T>(i % 2);
    } else {
      data[i] = static_cast<T>(0.5 + 0.25 * static_cast<double>(i % 5));
    }
  }
}

at::Tensor pattern(int64_t elements, const at::TensorOptions& options) {
  switch (options.dtype().toScalarType()) {
#define AXON_PATTERN_CASE(cpp_type, name)              \
  case at::k##name: {                                  \
    at::Tensor out = at::empty({elements}, options);   \
    write_pattern(out.data_ptr<cpp_type>(), elements); \
    return out;                                        \
  }
    AT_FORALL_SCALAR_TYPES_WITH_COMPLEX(AXON_PATTERN_CASE)
#undef AXON_PATTERN_CASE
    default:
      break;
  }
  // Rarer dtypes (float8, unsigned 16-64 bit): the same values through int64
  // temporaries.
  const at::Tensor index = at::arange(elements, at::TensorOptions().dtype(at::kLong));
  if (at::isFloatingType(options.dtype().toScalarType()) || at::isComplexType(options.dtype().toScalarType())) {
    return index.remainder(5).to(at::kDouble).mul(0.25).add(0.5).to(options);
  }
  return index.remainder(2).to(options);
}

// A mapping of fresh anonymous pages, unmapped with the storage.
struct Mapping {
  void* base;
  size_t bytes;
};

void unmap(void* context) {
  auto* mapping = static_cast<Mapping*>(context);
  munmap(mapping->base, mapping->bytes);
  delete mapping;
}

at::Tensor mapped_zeros(int64_t elements, const at::TensorOptions& options) {
  const size_t bytes = static_cast<size_t>(elements) * options.dtype().itemsize();
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return at::zeros({elements}, options);
  c10::DataPtr data(base, new Mapping{base, bytes}, &unmap, c10::Device(c10::kCPU));
  // Resizable with the CPU allocator, as at::zeros' storage is: an out=
  // kernel that resizes its output moves it to a new allocation.
  auto storage = c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), bytes, std::move(data),
                                                       c10::GetCPUAllocator(), /*resizable=*/true);
  at::Tensor out = at::empty({0}, options);
  out.set_(at::Storage(std::move(storage)), 0, {elements}, {1});
  return out;
}

}  // namespace

c10::ArrayRef<Fill> fill_order(size_t stand_in_bytes, bool varied_first) {
  const size_t large_from = varied_first ? kLargestVariedFirstStandInBytes + 1 : kLargeStandInBytes;
  return stand_in_bytes >= large_from ? c10::ArrayRef<Fill>(kLargeOrder) : c10::ArrayRef<Fill>(kSmallOrder);
}

at::Tensor filled_with(int64_t elements, const at::TensorOptions& options, Fill fill) {
  if (fill == Fill::kOnes) return at::ones({elements}, options);
  if (fill == Fill::kZeros) {
    const size_t bytes = static_cast<size_t>(elements) * options.dtype().itemsize();
    return bytes >= kMappedZerosBytes ? mapped_zeros(elements, options) : at::zeros({elements}, options);
  }
  return pattern(elements, options);
}

StandIns::StandIns(const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args, Fill fill) : fill_(fill) {
  const auto& arguments = schema.arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    const bool indices = i < arguments.size() && names_indices(arguments[i].name());
    for_each_tensor(args[i], [&](const at::Tensor& tensor) { measure(tensor, indices); });
  }
}

at::Tensor StandIns::operator()(const at::Tensor& tensor) {
  if (!tensor.defined() || !tensor.is_privateuseone()) return tensor;
  // A tensor passed twice (`mul(x, y, out=x)`) is one stand-in: the CPU
  // treats out= being an input as in-place.
  auto known = tensors_.find(tensor.unsafeGetTensorImpl());
  if (known != tensors_.end()) return known->second;
  const auto options = tensor.options().device(c10::kCPU).requires_grad(false);
  at::Tensor stand_in = at::empty({0}, options);
  if (tensor.numel() == 0) {
    stand_in.as_strided_(tensor.sizes(), tensor.strides());
  } else {
    Span& span = spans_.at(tensor.storage().unsafeGetStorageImpl());
    const int64_t itemsize = static_cast<int64_t>(tensor.element_size());
    if (!span.memory.defined()) {
      // Typed as the first tensor that reaches it, and filled once.
      const Fill fill = span.holds_indices && fill_ == Fill::kPattern &&
                                !at::isFloatingType(options.dtype().toScalarType()) &&
                                !at::isComplexType(options.dtype().toScalarType())
                            ? Fill::kZeros
                            : fill_;
      span.memory = filled_with((span.end - span.begin + itemsize - 1) / itemsize, options, fill);
    }
    stand_in.set_(span.memory.storage(), (tensor.storage_offset() * itemsize - span.begin) / itemsize, tensor.sizes(),
                  tensor.strides());
  }
  stand_in._set_conj(tensor.is_conj());
  stand_in._set_neg(tensor.is_neg());
  tensors_.emplace(tensor.unsafeGetTensorImpl(), stand_in);
  return stand_in;
}

void StandIns::refill(Fill fill) {
  fill_ = fill;
  tensors_.clear();
  for (auto& entry : spans_) entry.second.memory.reset();
}

size_t StandIns::bytes() const {
  size_t total = 0;
  for (const auto& entry : spans_) total += static_cast<size_t>(entry.second.end - entry.second.begin);
  return total;
}

void StandIns::measure(const at::Tensor& tensor, bool indices) {
  if (!tensor.defined() || !tensor.is_privateuseone() || tensor.numel() == 0) return;
  Span& span = spans_[tensor.storage().unsafeGetStorageImpl()];
  span.holds_indices = span.holds_indices || indices;
  const int64_t itemsize = static_cast<int64_t>(tensor.element_size());
  int64_t last = 0;
  for (int64_t d = 0; d < tensor.dim(); ++d) last += (tensor.size(d) - 1) * tensor.stride(d);
  span.begin = std::min(span.begin, tensor.storage_offset() * itemsize);
  span.end = std::max(span.end, (tensor.storage_offset() + last + 1) * itemsize);
}

}  // namespace axon
