/* fgmm-global-est -- see gmm-global-est.c (the same main, full covariances). */
#define GH_FULL 1
#include "gmm-global-est.c"
