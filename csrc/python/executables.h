// torch_axon._C.Executable: a driver executable, loaded from an image and
// launched on a device's current stream with axon tensors as its bindings.
// The compile path (torch_axon/compile) runs its graphs through it.
#pragma once

#include <pybind11/pybind11.h>

namespace axon {

void init_executables(pybind11::module_& m);

}  // namespace axon
