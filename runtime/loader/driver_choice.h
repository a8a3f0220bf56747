// Which driver the boundary's calls reach: chosen once per process.
#pragma once

#include "axon/driver_api.h"

namespace axon::loader {

// The chosen driver's table (every slot of this build's axon_driver_api,
// null where an older driver lacks one), loading it on the first call; null
// if it failed to load, after storing "[call] ..." as this thread's detail.
const axon_driver_api* chosen_driver(const char* call);

// Records "[call] <detail>" as this thread's detail, until its next call
// reaches the driver (forget_loader_error).
void set_loader_error(const char* call, const char* detail);
void forget_loader_error();

// The detail the loader recorded for this thread's latest call, or null if
// that call reached the driver (whose own detail then applies).
const char* loader_error_message();

}  // namespace axon::loader
