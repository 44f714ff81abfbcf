// The host's world_finish_newton, in a unit of its own (see pipeline.h).
#define AXION_FUSED_HD
#include "fused_newton.h"
