#ifndef CHORUS_CFFMPEG_SHIM_H
#define CHORUS_CFFMPEG_SHIM_H

#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/opt.h>
#include <libavutil/samplefmt.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>
#include <libavutil/display.h>
#include <libavutil/pixdesc.h>
#include <libavutil/imgutils.h>

/* Swift cannot import function-like or compound macros; these wrap the ones Chorus needs. */

static inline int chorus_averror_eof(void) { return AVERROR_EOF; }
static inline int chorus_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int chorus_averror_enomem(void) { return AVERROR(ENOMEM); }
static inline int chorus_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int chorus_averror_exit(void) { return AVERROR_EXIT; }
static inline int64_t chorus_av_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline int chorus_av_time_base(void) { return AV_TIME_BASE; }
static inline AVRational chorus_av_time_base_q(void) { return AV_TIME_BASE_Q; }

/* av_err2str is a macro around a compound literal; this is its function form. */
static inline void chorus_av_strerror(int code, char *buffer, size_t size) {
    av_strerror(code, buffer, size);
}

/* The default layout for a channel count, as FFmpeg would pick it. */
static inline void chorus_default_layout(AVChannelLayout *layout, int channels) {
    av_channel_layout_default(layout, channels);
}

/* Whether a decoder's layout is set (order != UNSPEC). */
static inline int chorus_layout_is_unspecified(const AVChannelLayout *layout) {
    return layout->order == AV_CHANNEL_ORDER_UNSPEC || layout->nb_channels == 0;
}

/* FFmpeg's logging goes to stderr by default; Chorus reports errors itself. */
static inline void chorus_av_quiet(void) { av_log_set_level(AV_LOG_QUIET); }
static inline void chorus_av_log_errors(void) { av_log_set_level(AV_LOG_ERROR); }

/* The rotation a stream's display matrix asks for, in degrees counter-clockwise as FFmpeg
   reports it; NAN when the stream has no display matrix. */
static inline double chorus_stream_rotation(const AVStream *stream) {
    const uint8_t *matrix = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, NULL);
    if (!matrix) return NAN;
    return av_display_rotation_get((const int32_t *)matrix);
}

/* Frame threading and slice threading, as the codec allows. */
static inline int chorus_thread_frame_and_slice(void) { return FF_THREAD_FRAME | FF_THREAD_SLICE; }

#endif
