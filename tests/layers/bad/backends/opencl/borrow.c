/* a deliberate violation for the layers test: one backend borrowing another's file */
#include "backends/cpu/kernels.h"
#include "backends/common/rows.h"
#include "runtime/backend.h"
