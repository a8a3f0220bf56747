// Whether a profiler is recording device activity right now, for launch
// paths that name their work only when someone will read the name
// (device_activity_profiler.cpp sets it; a relaxed read costs nothing).
#pragma once

namespace axon {

bool device_activity_recording();

}  // namespace axon
