#ifndef CHORUS_CPULSE_SHIM_H
#define CHORUS_CPULSE_SHIM_H

/* PulseAudio's client library, used only to read the server's own latency figures for a
   stream that ALSA's pulse plugin plays (see PulseLatencyProbe). */
#include <pulse/pulseaudio.h>

#endif
