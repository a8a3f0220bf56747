// torch_axon._C bindings for sharing tensors' bytes between host and device
// (see core/host_import.h).
#pragma once

#include <pybind11/pybind11.h>

namespace axon {

// Adds _adopt_host_tensor and _host_alias to `module`.
void bind_host_import(pybind11::module_& module);

}  // namespace axon
