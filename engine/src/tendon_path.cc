// The host's one copy of a spatial tendon's path geometry (kernels_tendon_path.h).
#define AXION_TENDON_PATH_DEFINITION 1
#include "kernels_tendon_path.h"
