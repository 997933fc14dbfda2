#ifndef CHORUS_COPUS_SHIM_H
#define CHORUS_COPUS_SHIM_H

#include <opus/opus.h>

/* opus_encoder_ctl is variadic; Swift cannot call it, so each request Chorus needs gets a
   fixed-signature wrapper. */
static inline int chorus_opus_set_bitrate(OpusEncoder *encoder, opus_int32 bitsPerSecond) {
    return opus_encoder_ctl(encoder, OPUS_SET_BITRATE(bitsPerSecond));
}
static inline int chorus_opus_get_lookahead(OpusEncoder *encoder, opus_int32 *samples) {
    return opus_encoder_ctl(encoder, OPUS_GET_LOOKAHEAD(samples));
}

#endif
