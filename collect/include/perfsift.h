/* perfsift region API (C, usable from C++). Link with -lperfsift_collect or preload it.
 * Without an active collection (no PERFSIFT_OUTPUT) every call returns at once.
 *
 *   perfsift_region_begin("solve");   ... perfsift_region_end("solve");
 *   perfsift_step_begin("exchange");  ... perfsift_step_end("exchange");
 *
 * Regions nest into a tree rooted at the whole program; metrics are inclusive. A step
 * region is a region whose every execution is numbered (step 0, 1, ...): what-if
 * questions can then address "step 3 of exchange". Codes that cannot include this
 * header may use MPI_Pcontrol(1, "name") / MPI_Pcontrol(-1, "name") for regions and
 * MPI_Pcontrol(2, "name") / MPI_Pcontrol(-2, "name") for steps. Fortran: `use perfsift`.
 */
#ifndef PERFSIFT_H
#define PERFSIFT_H

#define PERFSIFT_VERSION_MAJOR 0
#define PERFSIFT_VERSION_MINOR 1

#ifdef __cplusplus
extern "C" {
#endif

void perfsift_region_begin(const char *name);
void perfsift_region_end(const char *name);
void perfsift_step_begin(const char *region);
void perfsift_step_end(const char *region);

#ifdef __cplusplus
}
#endif

#endif /* PERFSIFT_H */
