// The stable name of each status ("AXON_ERROR_OUT_OF_MEMORY").
#pragma once

#include "axon/status.h"

namespace axon::common {

const char* status_name(axon_status status);

}  // namespace axon::common
