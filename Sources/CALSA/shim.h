#ifndef CHORUS_CALSA_SHIM_H
#define CHORUS_CALSA_SHIM_H

#include <alsa/asoundlib.h>

/* ALSA's *_alloca macros cannot be imported; Chorus allocates on the heap once, at open,
   never on the audio thread. Error codes are negative errno values. */

static inline int chorus_epipe(void) { return -EPIPE; }
static inline int chorus_estrpipe(void) { return -ESTRPIPE; }
static inline int chorus_eagain(void) { return -EAGAIN; }
static inline int chorus_eintr(void) { return -EINTR; }

/* Silence ALSA's own error printing (it writes straight to stderr). */
static void chorus_alsa_silent_handler(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}
static inline void chorus_alsa_quiet(void) { snd_lib_error_set_handler(chorus_alsa_silent_handler); }

#endif
