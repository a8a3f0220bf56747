#include "layouts/dense_result_prediction.h"

#include <ATen/ops/empty.h>

#include <c10/util/bit_cast.h>

#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <utility>

#include "ops/argument_tensors.h"
#include "ops/shape_inference.h"

namespace axon {
namespace {

// Whether a synchronous run's results are exactly the predicted ones.
bool matches_prediction(const std::vector<at::Tensor>& predicted, c10::ArrayRef<c10::IValue> results) {
  if (predicted.size() != results.size()) return false;
  for (size_t i = 0; i < predicted.size(); ++i) {
    if (!results[i].isTensor()) return false;
    const at::Tensor& real = results[i].toTensor();
    const at::Tensor& guess = predicted[i];
    if (!real.defined() || real.layout() != c10::kStrided || real.is_nested() || real.dtype() != guess.dtype() ||
        real.sizes() != guess.sizes()) {
      return false;
    }
    for (int64_t d = 0; d < real.dim(); ++d) {
      if (real.size(d) > 1 && real.stride(d) != guess.stride(d)) return false;
    }
  }
  return true;
}

// Signatures whose predictions a synchronous run confirmed (true) or refuted.
class PredictionRecord {
 public:
  std::optional<bool> find(const c10::FunctionSchema* schema, const std::vector<int64_t>& signature) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = verdicts_.find({schema, signature});
    return it == verdicts_.end() ? std::nullopt : std::optional<bool>(it->second);
  }
  void record(const c10::FunctionSchema* schema, std::vector<int64_t> signature, bool confirmed) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (verdicts_.size() > 4096) verdicts_.clear();  // bounded: signatures are few, but not fixed
    verdicts_[{schema, std::move(signature)}] = confirmed;
  }

 private:
  std::mutex mutex_;
  std::map<std::pair<const c10::FunctionSchema*, std::vector<int64_t>>, bool> verdicts_;
};

PredictionRecord& prediction_record() {
  static PredictionRecord record;
  return record;
}

}  // namespace

std::vector<int64_t> call_signature(c10::ArrayRef<c10::IValue> args) {
  std::vector<int64_t> signature;
  const auto add_all = [&](c10::IntArrayRef values) {
    signature.push_back(static_cast<int64_t>(values.size()));
    signature.insert(signature.end(), values.begin(), values.end());
  };
  for (const auto& arg : args) {
    signature.push_back(static_cast<int64_t>(std::hash<std::string_view>()(arg.tagKind())));
    for_each_tensor(arg, [&](const at::Tensor& t) {
      signature.push_back(t.defined());
      if (!t.defined()) return;
      signature.push_back(static_cast<int64_t>(t.layout()));
      signature.push_back(static_cast<int64_t>(t.scalar_type()));
      signature.push_back(static_cast<int64_t>(t.device().type()) * 1024 + t.device().index());
      signature.push_back(t.requires_grad());  // kernels may return more when it is set (_sparse_mm_reduce_impl)
      if (t.is_nested()) return;
      add_all(t.sizes());
      if (t.layout() == c10::kStrided) {
        add_all(t.strides());
      } else if (t.layout() == c10::kSparse) {
        signature.push_back(t.sparse_dim());
        signature.push_back(t.dense_dim());
      } else {
        add_all(t.values().sizes().slice(1));  // block sizes and dense dimensions (the first is nnz)
      }
    });
    if (arg.isInt()) signature.push_back(arg.toInt());
    if (arg.isBool()) signature.push_back(arg.toBool());
    if (arg.isDouble()) signature.push_back(c10::bit_cast<int64_t>(arg.toDouble()));
    if (arg.isString()) signature.push_back(static_cast<int64_t>(std::hash<std::string_view>()(arg.toStringView())));
    if (arg.isIntList()) add_all(arg.toIntVector());
    if (arg.isDevice())
      signature.push_back(static_cast<int64_t>(arg.toDevice().type()) * 1024 + arg.toDevice().index());
  }
  return signature;
}

std::optional<std::vector<at::Tensor>> predict_dense_results(const c10::OperatorHandle& op, const OperatorPlan& plan,
                                                             c10::ArrayRef<c10::IValue> args) {
  torch::jit::Stack meta;
  bool representable = true;
  for (size_t i = 0; i < args.size(); ++i) {
    if (plan.argument_is_mutable[i]) return std::nullopt;
    meta.push_back(retarget_device(map_tensors(args[i],
                                               [&](const at::Tensor& t) {
                                                 if (!t.defined() || !t.is_privateuseone()) return t;
                                                 if (t.is_nested()) {
                                                   representable = false;
                                                   return t;
                                                 }
                                                 if (t.layout() == c10::kStrided) return to_meta(t);
                                                 return at::empty(t.sizes(),
                                                                  t.options().device(c10::kMeta).layout(c10::kStrided));
                                               }),
                                   c10::kMeta));
  }
  if (!representable) return std::nullopt;
  static std::mutex mutex;
  static std::set<const c10::FunctionSchema*> without_meta_kernel;  // asking again would build the error again
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (without_meta_kernel.count(&op.schema())) return std::nullopt;
  }
  try {
    c10::impl::ExcludeDispatchKeyGuard no_autograd(c10::autograd_dispatch_keyset_with_ADInplaceOrView);
    op.callBoxed(meta);
  } catch (const c10::NotImplementedError&) {
    std::lock_guard<std::mutex> lock(mutex);
    without_meta_kernel.insert(&op.schema());
    return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::vector<at::Tensor> results;
  for (const auto& result : meta) {
    if (!result.isTensor() || !result.toTensor().defined()) return std::nullopt;
    results.push_back(result.toTensor());
  }
  return results;
}

std::optional<bool> prediction_verdict(const c10::FunctionSchema& schema, const std::vector<int64_t>& signature) {
  return prediction_record().find(&schema, signature);
}

void record_prediction(const c10::FunctionSchema& schema, std::vector<int64_t> signature,
                       const std::vector<at::Tensor>& predicted, c10::ArrayRef<c10::IValue> results) {
  prediction_record().record(&schema, std::move(signature), matches_prediction(predicted, results));
}

}  // namespace axon
