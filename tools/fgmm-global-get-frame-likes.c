/* fgmm-global-get-frame-likes -- see gmm-global-get-frame-likes.c (the same main, full covariances). */
#define GH_FULL 1
#include "gmm-global-get-frame-likes.c"
