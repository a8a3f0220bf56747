#include "host_execution/convolution.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/native/ConvUtils.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/sum.h>
#include <c10/core/DeviceGuard.h>

#include <atomic>

#include "core/check.h"
#include "core/host_waits.h"
#include "core/stream.h"
#include "host_execution/convolution_call_shapes.h"
#include "host_execution/convolution_meta_results.h"
#include "host_execution/device_memory_views.h"
#include "host_execution/results_in_place.h"
#include "host_execution/stream_launch.h"

namespace axon {
namespace {

std::atomic<int64_t> biases_summed_apart{0};

// Tags of the two operators' keys in the call cache.
constexpr int64_t kForward = 0;
constexpr int64_t kBackward = 1;

at::Tensor meta_like(const at::Tensor& tensor) {
  return at::empty_strided(tensor.sizes(), tensor.strides(), tensor.options().device(c10::kMeta));
}

std::optional<at::Tensor> meta_like(const std::optional<at::Tensor>& tensor) {
  if (!tensor.has_value() || !tensor->defined()) return std::nullopt;
  return meta_like(*tensor);
}

// A CPU tensor with `tensor`'s sizes, strides and dtype over no memory of
// its own: what the CPU's choice of convolution backend reads (metadata,
// never elements).
at::Tensor cpu_metadata_of(const at::Tensor& tensor) {
  alignas(64) static char nothing[64];
  return at::from_blob(nothing, tensor.sizes(), tensor.strides(), tensor.options().device(c10::kCPU));
}

// A result shaped like `meta`; 4-d and 5-d results in `format`.
at::Tensor allocate_like(const at::Tensor& meta, const c10::Device& device, c10::MemoryFormat format) {
  if (!meta.defined()) return at::Tensor();
  if (format != c10::MemoryFormat::Contiguous && meta.dim() == (format == c10::MemoryFormat::ChannelsLast ? 4 : 5)) {
    return at::empty(meta.sizes(), meta.options().device(device).memory_format(format));
  }
  return at::empty_strided(meta.sizes(), meta.strides(), meta.options().device(device));
}

// Multiply-adds of one pass over a convolution's work (the forward, or one of
// its gradients): each weight element meets each output position of each batch
// element once; a transposed convolution runs the same loop with the input's
// positions in the output's place.
double convolution_multiply_adds(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& output,
                                 bool transposed) {
  const at::Tensor& positions = transposed ? input : output;
  double work = double(weight.numel());
  for (int64_t d = 0; d < positions.dim(); ++d) {
    if (d != 1) work *= double(positions.size(d));  // the batch and the spatial dimensions
  }
  return work;
}

// Whether a convolution runs with the worker's OpenMP team. Its bytes say
// little about its work: a 7x7 depthwise convolution over 256 KiB of input
// does 3.2 million multiply-adds, and below kSingleThreadBelowBytes it ran on
// one thread, its backward 1.6-1.8x slower than the CPU's two threads. What
// pays is a pass's time (docs/benchmarks.md, stop 57). Depthwise kernels take
// 5-10x a dense kernel's time per multiply-add: from 0.8M a pass, their 7x7
// backward calls ran 1.4-1.7x faster with the team. Dense ones gain from 2M
// (1x1 and 3x3 forward calls 1.2-2x); around 1M they broke even or lost up to
// a tenth, and in a small ResNet's training step, whose convolutions sit there,
// the team read 5% slower.
bool convolution_wants_team(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& output,
                            bool transposed, int64_t groups) {
  const bool depthwise = groups > 1 && input.dim() > 1 && groups == input.size(1);
  const double threshold = depthwise ? 750'000.0 : 2'000'000.0;
  return convolution_multiply_adds(input, weight, output, transposed) >= threshold;
}

}  // namespace

c10::MemoryFormat convolution_result_format(const at::Tensor& input, const at::Tensor& weight,
                                            const std::optional<at::Tensor>& bias, c10::IntArrayRef stride,
                                            c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                                            c10::IntArrayRef output_padding, int64_t groups) {
  const at::Tensor cpu_input = cpu_metadata_of(input), cpu_weight = cpu_metadata_of(weight);
  std::optional<at::Tensor> cpu_bias;
  if (bias.has_value() && bias->defined()) cpu_bias = cpu_metadata_of(*bias);
  const at::native::ConvBackend backend = at::native::select_conv_backend(
      cpu_input, cpu_weight, cpu_bias, c10::fromIntArrayRefSlow(stride), c10::fromIntArrayRefSlow(padding),
      c10::fromIntArrayRefSlow(dilation), transposed, c10::fromIntArrayRefSlow(output_padding), groups, std::nullopt);
  return at::native::_determine_backend_memory_format(cpu_input, cpu_weight, backend);
}

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias, c10::IntArrayRef stride,
                                    c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                                    c10::IntArrayRef output_padding, int64_t groups) {
  const c10::DeviceGuard guard(input.device());
  // Shape and argument checks happen here, on the caller's thread, at a call's first metadata.
  const auto shapes = convolution_call_shapes(
      ConvolutionCallKey(kForward)
          .tensor(input)
          .tensor(weight)
          .tensor(bias.has_value() ? *bias : at::Tensor())
          .integers(stride)
          .integers(padding)
          .integers(dilation)
          .integer(transposed)
          .integers(output_padding)
          .integer(groups),
      [&] {
        ConvolutionCallShapes computed;
        std::optional<at::Tensor> result =
            convolution_meta_result(input, weight, stride, padding, dilation, transposed, output_padding, groups);
        // The meta kernel itself where the C++ one declines: it raises the error.
        computed.results[0] = result ? *result
                                     : at::convolution(meta_like(input), meta_like(weight), meta_like(bias), stride,
                                                       padding, dilation, transposed, output_padding, groups);
        computed.format = convolution_result_format(input, weight, bias, stride, padding, dilation, transposed,
                                                    output_padding, groups);
        computed.team = convolution_wants_team(input, weight, computed.results[0], transposed, groups);
        return computed;
      });
  at::Tensor output = allocate_like(shapes->results[0], input.device(), shapes->format);
  HostAliases aliases;
  std::optional<at::Tensor> bias_alias;
  if (bias.has_value() && bias->defined()) bias_alias = aliases.alias(*bias);
  const axon_stream stream = current_stream_handle(input.device().index());
  auto body = [=, stride = stride.vec(), padding = padding.vec(), dilation = dilation.vec(),
               output_padding = output_padding.vec(), input_alias = aliases.alias(input),
               weight_alias = aliases.alias(weight), output_alias = aliases.alias(output, Access::overwrite)]() {
    run_with_results_in_place({output_alias}, [&] {
      return std::vector<at::Tensor>{at::convolution(input_alias, weight_alias, bias_alias, stride, padding, dilation,
                                                     transposed, output_padding, groups)};
    });
  };
  if (!at::isFloatingType(input.scalar_type()) && !at::isComplexType(input.scalar_type())) {
    // Which integer convolutions the CPU accepts depends on the algorithm it
    // picks (dilated ones are refused), which only running it tells: these
    // rare calls run on this thread, so a refusal is raised at the call.
    // Staged memory is copied in and out around it, the stream drained each time.
    aliases.stage_in(stream);
    AXON_CHECK(wait_for_stream(stream), "aten::convolution_overrideable");
    {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      body();
    }
    aliases.stage_out(stream);
    AXON_CHECK(wait_for_stream(stream), "aten::convolution_overrideable");
    return output;
  }
  launch_on_stream(stream, "aten::convolution_overrideable", aliases, std::move(body), LaunchRelease::kOnWorker,
                   shapes->team ? TeamUse::kForWork : TeamUse::kBySize);
  return output;
}

namespace {

// Whether the kernel is 1 wide in every spatial axis and some stride is
// above 1, without padding: each output position reads one input position,
// the one at the output's index times the stride.
bool strided_pointwise(const at::Tensor& weight, c10::IntArrayRef stride, c10::IntArrayRef padding) {
  const int64_t axes = weight.dim() - 2;
  const auto steps = per_axis(stride, axes), pads = per_axis(padding, axes);
  if (!steps || !pads) return false;
  bool strided = false;
  for (int64_t axis = 0; axis < axes; ++axis) {
    if (weight.size(axis + 2) != 1 || (*pads)[axis] != 0) return false;
    strided = strided || (*steps)[axis] > 1;
  }
  return strided;
}

// The weight's gradient of such a convolution, from the input positions it
// reads (every stride-th, a copy in `format`) with stride 1. Why: the CPU's
// kernel (oneDNN's 1x1 backward-weights with a stride, channels-last, 2 to 6
// input channels, PyTorch 2.13 on an AVX2 host) returned wrong gradients and
// wrote past a buffer of its own (docs/benchmarks.md, stop 63); with stride 1
// it is right. The sums are the same products in another order.
at::Tensor pointwise_weight_gradient_from_samples(const at::Tensor& grad_output, const at::Tensor& input,
                                                  const at::Tensor& weight, c10::IntArrayRef stride,
                                                  c10::IntArrayRef dilation, int64_t groups, c10::MemoryFormat format) {
  const int64_t axes = weight.dim() - 2;
  const std::vector<int64_t> steps = *per_axis(stride, axes);  // strided_pointwise checked the count
  at::Tensor samples = input;
  for (int64_t axis = 0; axis < axes; ++axis) {
    samples = samples.slice(axis + 2, 0, grad_output.size(axis + 2) * steps[axis], steps[axis]);
  }
  samples = samples.contiguous(format);
  const std::vector<int64_t> ones(static_cast<size_t>(axes), 1), zeros(static_cast<size_t>(axes), 0);
  const std::vector<int64_t> bias_sizes{weight.size(0)};
  return std::get<1>(at::convolution_backward(grad_output, samples, weight, bias_sizes, ones, zeros, dilation, false,
                                              zeros, groups, {false, true, false}));
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, c10::IntArrayRef stride,
    c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed, c10::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask) {
  const c10::DeviceGuard guard(input.device());
  const std::vector<int64_t> bias_sizes{weight.size(transposed ? 1 : 0) * (transposed ? groups : 1)};
  const auto shapes = convolution_call_shapes(
      ConvolutionCallKey(kBackward)
          .tensor(grad_output)
          .tensor(input)
          .tensor(weight)
          .integers(stride)
          .integers(padding)
          .integers(dilation)
          .integer(transposed)
          .integers(output_padding)
          .integer(groups)
          .integers({output_mask[0], output_mask[1], output_mask[2]}),
      [&] {
        ConvolutionCallShapes computed;
        computed.results = convolution_backward_meta_results(grad_output, input, weight, bias_sizes, output_mask);
        computed.format = convolution_result_format(input, weight, std::nullopt, stride, padding, dilation, transposed,
                                                    output_padding, groups);
        // By one pass, though the input's and the weight's gradients take one each: small 3x3 backward
        // calls of 1.2M multiply-adds in all ran a tenth slower with the team.
        computed.team = convolution_wants_team(input, weight, grad_output, transposed, groups);
        return computed;
      });
  at::Tensor grad_input = allocate_like(shapes->results[0], input.device(), shapes->format);
  at::Tensor grad_weight = allocate_like(shapes->results[1], input.device(), shapes->format);
  at::Tensor grad_bias = allocate_like(shapes->results[2], input.device(), c10::MemoryFormat::Contiguous);
  // The bias's gradient of a channels-last float convolution is summed apart (below).
  const bool bias_apart = output_mask[2] && !transposed && shapes->format == c10::MemoryFormat::ChannelsLast &&
                          grad_output.dim() == 4 && grad_output.scalar_type() == at::kFloat;
  // Fewer than 8 input channels a group: where the CPU's kernel was seen wrong (2 to 6); from 8 up
  // (9 to 62 swept) it is right, and those calls keep the CPU's kernel and its bits.
  const bool weight_from_samples =
      output_mask[1] && !transposed && input.size(1) / groups < 8 && strided_pointwise(weight, stride, padding) &&
      (shapes->format == c10::MemoryFormat::ChannelsLast || shapes->format == c10::MemoryFormat::ChannelsLast3d);
  HostAliases aliases;
  auto body = [=, shapes = shapes, stride = stride.vec(), padding = padding.vec(), dilation = dilation.vec(),
               output_padding = output_padding.vec(), grad_output_alias = aliases.alias(grad_output),
               input_alias = aliases.alias(input), weight_alias = aliases.alias(weight),
               grad_input_alias = aliases.alias(grad_input, Access::overwrite),
               grad_weight_alias = aliases.alias(grad_weight, Access::overwrite),
               grad_bias_alias = aliases.alias(grad_bias, Access::overwrite)]() {
    const std::array<bool, 3> mask{output_mask[0], output_mask[1] && !weight_from_samples,
                                   output_mask[2] && !bias_apart};
    if (mask[0] || mask[1] || mask[2]) {
      run_with_results_in_place(
          {grad_input_alias, grad_weight_alias, bias_apart ? at::Tensor() : grad_bias_alias}, [&] {
            const auto [input_result, weight_result, bias_result] =
                at::convolution_backward(grad_output_alias, input_alias, weight_alias, bias_sizes, stride, padding,
                                         dilation, transposed, output_padding, groups, mask);
            return std::vector<at::Tensor>{input_result, weight_result, bias_apart ? at::Tensor() : bias_result};
          });
    }
    if (weight_from_samples) {
      at::Tensor weight_result = grad_weight_alias;  // the alias's handle; the body's captures are const
      weight_result.copy_(pointwise_weight_gradient_from_samples(grad_output_alias, input_alias, weight_alias, stride,
                                                                 dilation, groups, shapes->format));
    }
    // Why apart: oneDNN's backward summed the bias's gradient of channels-last data slowly, 4-28% of
    // the whole call (docs/benchmarks.md, stop 60); ATen's sum over all but the channel dimension is
    // one vectorized pass. Its float summation order differs from oneDNN's, as two CPU kernels' may.
    if (bias_apart) {
      at::Tensor bias_result = grad_bias_alias;  // the alias's handle; the body's captures are const
      at::sum_out(bias_result, grad_output_alias, {0, 2, 3});
      biases_summed_apart.fetch_add(1, std::memory_order_relaxed);
    }
  };
  launch_on_stream(current_stream_handle(input.device().index()), "aten::convolution_backward_overrideable", aliases,
                   std::move(body), LaunchRelease::kOnWorker, shapes->team ? TeamUse::kForWork : TeamUse::kBySize);
  return {grad_input, grad_weight, grad_bias};
}

int64_t convolution_biases_summed_apart() { return biases_summed_apart.load(std::memory_order_relaxed); }

}  // namespace axon
