// Random operators on axon (see random.cpp for the counter layout).
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace axon {

at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> generator);
at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> generator);
at::Tensor& bernoulli_(at::Tensor& self, double p, std::optional<at::Generator> generator);
at::Tensor& random_from_(at::Tensor& self, int64_t from, std::optional<int64_t> to,
                         std::optional<at::Generator> generator);
at::Tensor& random_to_(at::Tensor& self, int64_t to, std::optional<at::Generator> generator);
at::Tensor& random_(at::Tensor& self, std::optional<at::Generator> generator);
std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train);

}  // namespace axon
