#ifndef CHORUS_CRUBBERBAND_SHIM_H
#define CHORUS_CRUBBERBAND_SHIM_H

// Rubber Band's C interface: the pitch-keeping stage of the render thread (PitchKeeper).
#include <rubberband/rubberband-c.h>

#endif
