// The host's world_finish_newton, in a unit of its own (see pipeline.h).
#include "fused_newton.h"
