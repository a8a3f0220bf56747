// axon_status_name: the loader's own, the same for every driver.

#include "status_names.h"
#include "axon/status.h"

extern "C" const char* axon_status_name(axon_status status) { return axon::common::status_name(status); }
