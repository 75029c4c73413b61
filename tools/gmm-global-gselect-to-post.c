/* gmm-global-gselect-to-post -- see fgmm-global-gselect-to-post.c (the same main, diagonal covariances). */
#define GH_DIAG 1
#include "fgmm-global-gselect-to-post.c"
