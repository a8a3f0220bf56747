// The emulated driver's entry point for the loader, which builds it in
// (AXON_DRIVER unset or "emulated") instead of loading it by path: its table.
#pragma once

#include "axon/driver_api.h"

namespace axon::emulated {

const axon_driver_api* driver_api();

}  // namespace axon::emulated
