// Whether a profiler is recording device activity right now, for launch
// paths that name their work only when someone will read the name
// (device_activity_profiler.cpp sets it; a relaxed read costs nothing).
#pragma once

#include <string>

#include "axon/activity.h"

namespace axon {

bool device_activity_recording();

// Names, on the profiler's device rows, the work the calling thread queues
// while the scope lasts (axon_activity_set_label). `make_label` builds the
// name and runs only while a profiler records; an empty name names nothing.
class ActivityLabelScope {
 public:
  template <typename MakeLabel>
  explicit ActivityLabelScope(MakeLabel make_label) : labelled_(device_activity_recording()) {
    if (labelled_) axon_activity_set_label(std::string(make_label()).c_str());
  }
  ~ActivityLabelScope() {
    if (labelled_) axon_activity_set_label(nullptr);
  }
  ActivityLabelScope(const ActivityLabelScope&) = delete;
  ActivityLabelScope& operator=(const ActivityLabelScope&) = delete;

 private:
  bool labelled_;
};

}  // namespace axon
