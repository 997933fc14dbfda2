#ifndef CHORUS_CFFMPEG_SHIM_H
#define CHORUS_CFFMPEG_SHIM_H

#include <libavformat/avformat.h>
#include <string.h>
#include <stdio.h>
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
#include <libavutil/mem.h>
#include <libavutil/bprint.h>
#include <libavutil/time.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

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

/* ---- Certificate checks on every fetch ----

   FFmpeg checks a TLS server's certificate only when an open is given `tls_verify=1` (and
   `ca_file` for authorities other than the system's). The options given to
   avformat_open_input reach the first connection alone: a demuxer that fetches more URLs
   itself (HLS: variant and media playlists, their refreshes, segments, keys) passes on only
   a fixed list of options (headers, user agent, cookies, timeouts...), so those fetches
   would take any certificate. Every such fetch goes through the context's io_open callback,
   and so does the first; Chorus installs chorus_io_open there, which adds the options to
   each open and then calls FFmpeg's own io_open.

   The options go to every open, whatever its scheme: an http: URL may be redirected to
   https:, and FFmpeg's HTTP layer hands its options on to the TLS connection a redirect
   makes; `crypto+https:` and the like hand them on to the nested protocol; a protocol
   without TLS ignores them. */

/* The signature of AVFormatContext.io_open. */
typedef int (*ChorusIOOpen)(struct AVFormatContext *s, AVIOContext **pb, const char *url,
                            int flags, AVDictionary **options);

/* Rewrites an HLS playlist as it is fetched: given its text, the URL asked for and the URL
   the text came from (after redirects; the same when none), returns the URL to open in its
   place (a `data:` URL, av_malloc'd), or NULL when it cannot (the open then fails). */
typedef char *(*ChorusPlaylistRewrite)(void *opaque, const char *text, const char *url, const char *location);

/* The most bytes of a playlist the rewrite reads: as HLSRenditions.largestPlaylist. */
#define CHORUS_LARGEST_PLAYLIST (1 << 20)

/* The inputs an HLS demuxer opens whose URLs are kept (`opened_urls`): its variants'
   playlists and a first segment of each, with room to spare. */
#define CHORUS_RECORDED_OPENINGS 16

/* The ID3 tags kept from the starts of an HLS demuxer's segments until the reader takes
   them (`segment_tags`): a few segments' worth, more than one read of the demuxer opens. */
#define CHORUS_SEGMENT_TAGS 8
/* The longest segment tag kept, in bytes: a packed-audio segment's tag holds its timestamp
   and a few text frames (hundreds of bytes); a longer one (a picture) is not kept. */
#define CHORUS_SEGMENT_TAG_BYTES 4096

/* One ID3 tag from the start of a segment. */
typedef struct ChorusSegmentTag {
    int length;
    uint8_t bytes[CHORUS_SEGMENT_TAG_BYTES];
} ChorusSegmentTag;

/* Inputs of an HLS demuxer followed while open: its playlists' and its segments'
   connections, a few more than it keeps open at once. */
#define CHORUS_TRACKED_INPUTS 8

/* What chorus_io_open needs for one format context (and the contexts a demuxer nests in
   it, which FFmpeg gives the same `opaque`). Owned by the caller, zeroed before install,
   and kept until the context is closed. Used by the one thread using the context. */
typedef struct ChorusFetchPolicy {
    /* The context's io_open before chorus_io_open replaced it (FFmpeg's default). */
    ChorusIOOpen original;
    /* The PEM file of the authorities certificates are checked against; NULL or empty for
       the system's. Borrowed: it must outlive the context (Chorus's is process-wide, made
       once and never freed). */
    const char *ca_file;
    /* The first fetch that failed (not counting interruptions): FFmpeg's status, 0 while
       none has, and its URL (av_malloc'd, NULL while none or out of memory; freed by
       chorus_fetch_policy_clear). A demuxer may hide such a failure behind one of its own
       (HLS skips a segment it cannot fetch, then finds no data): this says which fetch it was. */
    int failed_status;
    char *failed_url;
    /* Every fetch that failed so far (not counting interruptions), and the latest's
       status and URL (av_malloc'd, NULL while none or out of memory; freed by
       chorus_fetch_policy_clear): a demuxer that skips what it cannot fetch (HLS, a
       segment) goes on without a word, and its reader tells these to the item's error log. */
    int failure_count;
    int last_failed_status;
    char *last_failed_url;
    /* The context's io_close2 before chorus_io_close2 replaced it (FFmpeg's default). */
    int (*original_close)(struct AVFormatContext *s, AVIOContext *pb);
    /* Bytes read by the inputs the context opened and closed again (an HLS demuxer's
       playlist refreshes and segment connections), counted at their close. */
    int64_t closed_bytes;
    /* The inputs an HLS demuxer has open now (its persistent connection to the segments,
       kept for the whole stream, a playlist's), whose bytes count while they are open.
       Only the HLS demuxer's: it closes every input it opens through io_close2
       (ff_format_io_close), which takes it out of here first, so none is read after it is
       freed; other demuxers' inputs count at their close. One that does not fit counts at
       its close too. */
    AVIOContext *open_inputs[CHORUS_TRACKED_INPUTS];
    /* Fetches refused because the server's certificate did not check out
       (chorus_tls_certificate_refused), and the first one's URL (av_malloc'd, NULL while
       none or out of memory; freed by chorus_fetch_policy_clear). A demuxer that skips a
       segment it cannot fetch would otherwise play on past a server that could not prove
       who it is, as if the segment were merely missing. */
    int certificate_refusals;
    char *certificate_refused_url;
    /* Whether an http: fetch that failed with EIO has been asked where it was redirected
       (chorus_redirected_certificate_refused): once per context, so that a flaky http:
       server's failed segments do not each cost a request more. */
    int redirect_probed;
    /* When set, every fetched input that is an HLS playlist (its first bytes, as they come,
       start "#EXTM3U"; an input whose first bytes come too few to tell fails to open) is
       read whole, given to this, and the URL it returns opened in its place: an on-demand
       stream opened again at a later segment (FFmpeg's demuxer starts such a playlist at
       its first segment, and seeks within it by times a splice may have sent back). Other
       inputs are opened as they are. `rewrite_opaque` is passed on; both are borrowed, and
       cleared by the caller once the demuxer has read its playlists. */
    ChorusPlaylistRewrite rewrite_playlist;
    void *rewrite_opaque;
    /* The ID3 tags an HLS demuxer's inputs begin with (a packed-audio segment's: its
       timestamp and, on a station, what is playing), the newest CHORUS_SEGMENT_TAGS, in a
       ring: tag n is at n % CHORUS_SEGMENT_TAGS, and `segment_tags_written` counts them.
       FFmpeg's demuxer reads only a stream's first such tag as its metadata and reports
       the later ones' changes as a missing feature, so the reader takes them from here. */
    ChorusSegmentTag segment_tags[CHORUS_SEGMENT_TAGS];
    int64_t segment_tags_written;
    /* The URLs of the first CHORUS_RECORDED_OPENINGS inputs an HLS demuxer opened besides
       its first (variant playlists and segments, av_malloc'd, in order; freed by
       chorus_fetch_policy_clear), and how many there are. A live stream's demuxer picks its
       first segment from the playlist as it read it, which may have moved on by the time
       anyone else reads it: this says by name which segment it was. */
    char *opened_urls[CHORUS_RECORDED_OPENINGS];
    int opened_count;
    /* The item's own `User-Agent` and header fields (FFmpeg's `user_agent` and `headers`
       options; av_malloc'd, NULL for none; freed by chorus_fetch_policy_clear), added to
       every open as the certificate checks are: FFmpeg's HLS demuxer passes such options on
       only from its first input, which a cut opening replaces with a playlist in memory. */
    char *user_agent;
    char *headers;
} ChorusFetchPolicy;

/* The status chorus_io_open's caller is told to fail with when a fetch was refused for its
   server's certificate (MediaSource.readFrame). */
static inline int chorus_averror_certificate_refused(void) { return FFERRTAG('C', 'E', 'R', 'T'); }

/* How long the handshake of chorus_tls_certificate_refused may take, connection included
   (µs): the server has just answered the same handshake, so a few seconds is plenty, and
   the fetch it explains has failed already. */
#define CHORUS_CERTIFICATE_PROBE_TIMEOUT_US 5000000

/* Makes a TLS handshake with `address` (tls://host:port), its certificate checked against
   `ca_file` (NULL or empty: the system's authorities) or not checked at all, and closes it
   at once; returns 0 when it succeeded, else FFmpeg's error. */
static inline int chorus_tls_handshake(const char *address, int verify, const char *ca_file,
                                       const AVIOInterruptCB *interrupt) {
    AVDictionary *options = NULL;
    char timeout[32];
    snprintf(timeout, sizeof timeout, "%d", CHORUS_CERTIFICATE_PROBE_TIMEOUT_US);
    if (av_dict_set(&options, "tls_verify", verify ? "1" : "0", 0) < 0 || av_dict_set(&options, "rw_timeout", timeout, 0) < 0
        || av_dict_set(&options, "timeout", timeout, 0) < 0
        || (verify && ca_file && ca_file[0] && av_dict_set(&options, "ca_file", ca_file, 0) < 0)) {
        av_dict_free(&options);
        return AVERROR(ENOMEM);
    }
    AVIOContext *connection = NULL;
    int status = avio_open2(&connection, address, AVIO_FLAG_READ_WRITE, interrupt, &options);
    av_dict_free(&options);
    if (status < 0) return status;
    avio_closep(&connection);
    return 0;
}

/* Whether the HTTPS fetch of `url` (https:, or a protocol nesting it such as crypto+https:)
   that failed with AVERROR(EIO) failed for its server's certificate: FFmpeg's TLS layer
   gives that same EIO for any failed handshake, and for any failed read. It is told by two
   more TLS handshakes with the same server: one checked as the fetch was (against
   `ca_file`), which must fail again with EIO (else the fetch failed for something passing,
   such as a connection reset, or for a server that does not answer a handshake, which
   times out), and one with the certificate not checked, which must succeed (the
   server is there and speaks TLS: the check is what refused it). Only handshakes are made,
   each closed at once: no request goes to a server that could not prove who it is. Each
   bounded by `interrupt` and CHORUS_CERTIFICATE_PROBE_TIMEOUT_US. */
static inline int chorus_tls_certificate_refused(const char *url, const char *ca_file, const AVIOInterruptCB *interrupt) {
    const char *https = url ? strstr(url, "https://") : NULL;
    if (!https) return 0;
    /* Only the URL's own scheme, https: or a protocol nesting it (crypto+https:): not an
       https:// further on, in a query. */
    for (const char *c = url; c < https; c++) {
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '+')) return 0;
    }
    if (https != url && https[-1] != '+') return 0;
    char host[256], probe[300];
    int port = -1;
    av_url_split(NULL, 0, NULL, 0, host, sizeof host, &port, NULL, 0, https);
    if (!host[0]) return 0;
    if (port < 0) port = 443;
    /* An IPv6 literal goes back in its brackets. */
    int written = strchr(host, ':') ? snprintf(probe, sizeof probe, "tls://[%s]:%d", host, port)
                                    : snprintf(probe, sizeof probe, "tls://%s:%d", host, port);
    if (written < 0 || (size_t)written >= sizeof probe) return 0;
    return chorus_tls_handshake(probe, 1, ca_file, interrupt) == AVERROR(EIO) && chorus_tls_handshake(probe, 0, NULL, interrupt) == 0;
}

/* The most redirects followed when looking for where an http: fetch was sent
   (chorus_redirected_certificate_refused): FFmpeg's HTTP layer itself gives up after a few
   more, and a chain longer than this is not a server sending a player on to a stream. */
#define CHORUS_REDIRECT_PROBE_HOPS 5
/* The most of an answer's head read when looking for its Location (bytes): a redirect's
   head is a few hundred bytes; a server sending more is not answered further. */
#define CHORUS_REDIRECT_PROBE_HEAD 8192
/* How long each poll of the probe's socket waits before the interrupt is asked again (ms). */
#define CHORUS_REDIRECT_PROBE_POLL_MS 50

/* Waits until `socket_fd` is ready for `events`, within `deadline` (av_gettime_relative µs)
   and while `interrupt` lets it; returns 1 when ready, 0 otherwise. */
static inline int chorus_probe_wait(int socket_fd, short events, int64_t deadline, const AVIOInterruptCB *interrupt) {
    for (;;) {
        if (interrupt && interrupt->callback && interrupt->callback(interrupt->opaque)) return 0;
        if (av_gettime_relative() >= deadline) return 0;
        struct pollfd waiting = { .fd = socket_fd, .events = events };
        int ready = poll(&waiting, 1, CHORUS_REDIRECT_PROBE_POLL_MS);
        if (ready > 0) return (waiting.revents & (events | POLLHUP | POLLERR)) ? 1 : 0;
        if (ready < 0 && errno != EINTR) return 0;
    }
}

/* Connects a non-blocking socket to one of `found`'s addresses, trying each in turn, by
   `deadline` and while `interrupt` lets it; returns the socket, or -1. */
static inline int chorus_probe_connect(struct addrinfo *found, int64_t deadline, const AVIOInterruptCB *interrupt) {
    for (struct addrinfo *address = found; address; address = address->ai_next) {
        int socket_fd = socket(address->ai_family, address->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, address->ai_protocol);
        if (socket_fd < 0) continue;
        int connected = connect(socket_fd, address->ai_addr, address->ai_addrlen) == 0 || errno == EINPROGRESS;
        if (connected) connected = chorus_probe_wait(socket_fd, POLLOUT, deadline, interrupt);
        int failure = 0;
        socklen_t length = sizeof failure;
        if (connected && getsockopt(socket_fd, SOL_SOCKET, SO_ERROR, &failure, &length) == 0 && failure == 0) return socket_fd;
        close(socket_fd);
        if (av_gettime_relative() >= deadline) break;
    }
    return -1;
}

/* Where the http: URL `url` sends its client when it answers with a redirect (a 3xx with
   an absolute http: or https: Location): copied into `location` (`size` bytes, NUL
   terminated); returns 1 then, else 0 (no redirect, a relative one, a location too long,
   an answer whose head does not end within CHORUS_REDIRECT_PROBE_HEAD bytes, no answer by
   `deadline` (av_gettime_relative µs)). The server is asked by a request of its own, a GET
   whose answer's head alone is read before the connection is closed: FFmpeg's HTTP layer
   follows redirects inside one open and keeps no record of where it went when the open
   fails. Stops when `interrupt` says so. */
static inline int chorus_http_redirect(const char *url, int64_t deadline, const AVIOInterruptCB *interrupt,
                                       char *location, size_t size) {
    if (!url || !location || size == 0 || strncasecmp(url, "http://", 7) != 0) return 0;
    if (interrupt && interrupt->callback && interrupt->callback(interrupt->opaque)) return 0;
    char host[256], path[2048], port_text[16], request[2600];
    int port = -1;
    av_url_split(NULL, 0, NULL, 0, host, sizeof host, &port, path, sizeof path, url);
    if (!host[0]) return 0;
    if (port < 0) port = 80;
    snprintf(port_text, sizeof port_text, "%d", port);
    int is_ipv6 = strchr(host, ':') != NULL;
    int written = snprintf(request, sizeof request,
                           "GET %s HTTP/1.1\r\nHost: %s%s%s:%d\r\nUser-Agent: Chorus\r\nAccept: */*\r\nConnection: close\r\n\r\n",
                           path[0] ? path : "/", is_ipv6 ? "[" : "", host, is_ipv6 ? "]" : "", port);
    if (written < 0 || (size_t)written >= sizeof request) return 0;
    /* (The name's lookup is the system resolver's, unbounded by the deadline: the failed
       fetch has just looked the same name up.) */
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *found = NULL;
    if (getaddrinfo(host, port_text, &hints, &found) != 0 || !found) return 0;
    int socket_fd = chorus_probe_connect(found, deadline, interrupt);
    freeaddrinfo(found);
    int connected = socket_fd >= 0;
    for (int sent = 0; connected && sent < written;) {
        ssize_t now = send(socket_fd, request + sent, (size_t)(written - sent), MSG_NOSIGNAL);
        if (now > 0) sent += (int)now;
        else if (now < 0 && (errno == EAGAIN || errno == EINTR)) connected = chorus_probe_wait(socket_fd, POLLOUT, deadline, interrupt);
        else connected = 0;
    }
    char head[CHORUS_REDIRECT_PROBE_HEAD + 1];
    size_t received = 0;
    int complete = 0;
    while (connected && received < CHORUS_REDIRECT_PROBE_HEAD) {
        head[received] = 0;
        if (strstr(head, "\r\n\r\n")) { complete = 1; break; }
        ssize_t now = recv(socket_fd, head + received, CHORUS_REDIRECT_PROBE_HEAD - received, 0);
        if (now > 0) received += (size_t)now;
        else if (now < 0 && (errno == EAGAIN || errno == EINTR)) connected = chorus_probe_wait(socket_fd, POLLIN, deadline, interrupt);
        else break;
    }
    head[received] = 0;
    if (!complete && strstr(head, "\r\n\r\n")) complete = 1;
    if (socket_fd >= 0) close(socket_fd);
    /* Only a whole head is read: a cut one could name a Location cut short. */
    if (!complete) return 0;
    /* "HTTP/1.x 3xx", then a Location line whose value is an absolute http(s): URL. */
    int code = 0;
    if (sscanf(head, "HTTP/%*d.%*d %d", &code) != 1 || code < 300 || code > 399) return 0;
    for (char *line = strstr(head, "\r\n"); line && line[2] && !(line[2] == '\r' && line[3] == '\n'); line = strstr(line + 2, "\r\n")) {
        if (strncasecmp(line + 2, "Location:", 9) != 0) continue;
        const char *value = line + 11;
        while (*value == ' ' || *value == '\t') value++;
        const char *end = strstr(value, "\r\n");
        if (!end) return 0;
        size_t length = (size_t)(end - value);
        while (length > 0 && (value[length - 1] == ' ' || value[length - 1] == '\t')) length--;
        if (length >= size || (strncasecmp(value, "http://", 7) != 0 && strncasecmp(value, "https://", 8) != 0)) return 0;
        memcpy(location, value, length);
        location[length] = 0;
        return 1;
    }
    return 0;
}

/* For an http: fetch `url` that failed with AVERROR(EIO): the https: address its redirects
   led to, when that server's certificate is what refused it (chorus_tls_certificate_refused),
   copied into `refused` (`size` bytes); returns 1 then, else 0. A server that sends a
   player from http: to https: (most content networks do) fails the fetch inside FFmpeg's
   HTTP layer with the same EIO as any broken connection. Follows at most
   CHORUS_REDIRECT_PROBE_HOPS redirects over http:, all of them within one
   CHORUS_CERTIFICATE_PROBE_TIMEOUT_US, then the two handshakes of
   chorus_tls_certificate_refused, each bounded by the same; no request goes to an https:
   server, only those handshakes. */
static inline int chorus_redirected_certificate_refused(const char *url, const char *ca_file, const AVIOInterruptCB *interrupt,
                                                        char *refused, size_t size) {
    if (!url || !refused || size == 0 || strncasecmp(url, "http://", 7) != 0) return 0;
    char current[2048], next[2048];
    if (strlen(url) >= sizeof current) return 0;
    strcpy(current, url);
    int64_t deadline = av_gettime_relative() + CHORUS_CERTIFICATE_PROBE_TIMEOUT_US;
    for (int hop = 0; hop < CHORUS_REDIRECT_PROBE_HOPS; hop++) {
        if (!chorus_http_redirect(current, deadline, interrupt, next, sizeof next)) return 0;
        if (strncasecmp(next, "https://", 8) == 0) {
            if (!chorus_tls_certificate_refused(next, ca_file, interrupt) || strlen(next) >= size) return 0;
            strcpy(refused, next);
            return 1;
        }
        strcpy(current, next);
    }
    return 0;
}

/* Adds the certificate checks to `options` (created when *options is NULL). Returns 0, or a
   negative AVERROR when the dictionary could not grow. */
static inline int chorus_add_certificate_checks(AVDictionary **options, const char *ca_file) {
    if (!options) return AVERROR(EINVAL);
    int status = av_dict_set(options, "tls_verify", "1", 0);
    if (status >= 0 && ca_file && ca_file[0]) status = av_dict_set(options, "ca_file", ca_file, 0);
    return status;
}

/* What a newly opened input begins with, without consuming it: the bytes its first fill
   brought (`*available` of them at `*start`), read by taking one byte, which fills the
   buffer once, and stepping back over it, which stays inside the buffer and so makes no
   request. Returns 0, or the failure of the read or of the step back (the input is then
   unusable). An empty input gives 0 bytes. */
static inline int chorus_peek(AVIOContext *pb, const uint8_t **start, int *available) {
    *start = NULL;
    *available = 0;
    (void)avio_r8(pb);
    if (pb->error < 0) return pb->error;
    /* Nothing came: an empty input (avio_r8 read no byte, so there is nothing to step back over). */
    if (pb->buf_ptr <= pb->buffer) return 0;
    *start = pb->buf_ptr - 1;
    *available = (int)(pb->buf_end - *start);
    return avio_seek(pb, -1, SEEK_CUR) < 0 ? AVERROR(EIO) : 0;
}

/* The size of the ID3v2 tag at `bytes` (header, frames and footer), or 0 when there is none
   or it does not fit in `available`. */
static inline int chorus_id3_tag_size(const uint8_t *bytes, int available) {
    if (available < 10 || memcmp(bytes, "ID3", 3) != 0 || bytes[3] == 0xFF || bytes[4] == 0xFF) return 0;
    if ((bytes[6] | bytes[7] | bytes[8] | bytes[9]) & 0x80) return 0;
    int size = 10 + (bytes[6] << 21 | bytes[7] << 14 | bytes[8] << 7 | bytes[9]) + ((bytes[5] & 0x10) ? 10 : 0);
    return size <= available ? size : 0;
}

/* For chorus_io_open, on an HLS demuxer's input (not its first): keeps the ID3 tag the
   input begins with, when the first bytes hold it whole, in the policy's ring. */
static inline int chorus_keep_segment_tag(ChorusFetchPolicy *policy, AVIOContext *pb) {
    const uint8_t *start;
    int available;
    int status = chorus_peek(pb, &start, &available);
    if (status < 0) return status;
    int size = start ? chorus_id3_tag_size(start, available) : 0;
    if (size > 0 && size <= CHORUS_SEGMENT_TAG_BYTES) {
        ChorusSegmentTag *tag = &policy->segment_tags[policy->segment_tags_written % CHORUS_SEGMENT_TAGS];
        memcpy(tag->bytes, start, (size_t)size);
        tag->length = size;
        policy->segment_tags_written += 1;
    }
    return 0;
}

/* For chorus_io_open with a playlist rewrite: when the input just opened at `*pb` is an HLS
   playlist, reads it whole, closes it and opens the rewrite's URL in its place, and returns
   1; any other input is left as it was (`chorus_peek`), and 0 returned; or the failure. */
static inline int chorus_rewrite_if_playlist(struct AVFormatContext *s, ChorusFetchPolicy *policy, AVIOContext **pb,
                                             const char *url, int flags, AVDictionary **options) {
    static const char signature[] = "#EXTM3U";
    const uint8_t *start;
    int available;
    int status = chorus_peek(*pb, &start, &available);
    if (status < 0) {
        avio_closep(pb);
        return status;
    }
    /* A first fill too short to tell (a server's first bytes in a chunk of their own) is
       not passed on unchecked: the opening fails, and the seek that asked for it seeks as
       it would have without it. */
    if (start && available < (int)sizeof signature - 1 && !(*pb)->eof_reached) {
        avio_closep(pb);
        return AVERROR(EAGAIN);
    }
    if (!start || available < (int)sizeof signature - 1 || memcmp(start, signature, sizeof signature - 1) != 0) return 0;
    AVBPrint text;
    av_bprint_init(&text, 0, CHORUS_LARGEST_PLAYLIST);
    status = avio_read_to_bprint(*pb, &text, CHORUS_LARGEST_PLAYLIST);
    uint8_t *location = NULL;
    if (av_opt_get(*pb, "location", AV_OPT_SEARCH_CHILDREN, &location) < 0) location = NULL;
    policy->closed_bytes += (*pb)->bytes_read;
    if (policy->original_close) policy->original_close(s, *pb); else avio_close(*pb);
    *pb = NULL;
    char *replacement = NULL;
    if (status >= 0 && av_bprint_is_complete(&text)) {
        replacement = policy->rewrite_playlist(policy->rewrite_opaque, text.str, url, location ? (const char *)location : url);
    }
    av_bprint_finalize(&text, NULL);
    av_free(location);
    if (!replacement) return status < 0 ? status : AVERROR(EINVAL);
    status = policy->original(s, pb, replacement, flags, options);
    av_free(replacement);
    /* The text's bytes were counted as they were fetched. */
    return status < 0 ? status : 1;
}

/* The io_open Chorus installs: FFmpeg's own, with the certificate checks added. Without a
   policy (or without the io_open it replaced) it opens nothing rather than open unchecked. */
static inline int chorus_io_open(struct AVFormatContext *s, AVIOContext **pb, const char *url,
                                 int flags, AVDictionary **options) {
    ChorusFetchPolicy *policy = s ? (ChorusFetchPolicy *)s->opaque : NULL;
    if (!policy || !policy->original) return AVERROR(EINVAL);
    /* Once a server's certificate was refused the item fails: a demuxer that skips what it
       cannot fetch (HLS, segment after segment within one read) fetches nothing more, each
       at the cost of a connection and the handshakes that told the refusal. */
    if (policy->certificate_refusals > 0) return AVERROR(EACCES);
    /* A caller may pass no dictionary; the checks then go in one of our own. A caller's
       own dictionary takes them in place, so that what the open leaves unused still comes
       back to the caller, as FFmpeg's io_open promises. */
    AVDictionary *own = NULL;
    AVDictionary **used = options ? options : &own;
    int status = chorus_add_certificate_checks(used, policy->ca_file);
    if (status >= 0 && policy->user_agent) status = av_dict_set(used, "user_agent", policy->user_agent, 0);
    if (status >= 0 && policy->headers) status = av_dict_set(used, "headers", policy->headers, 0);
    if (status >= 0) status = policy->original(s, pb, url, flags, used);
    /* 1: the input is a playlist handed over in memory, neither fetched nor counted again. */
    int handed_over = 0;
    if (status >= 0 && pb && *pb && policy->rewrite_playlist) {
        status = chorus_rewrite_if_playlist(s, policy, pb, url, flags, used);
        handed_over = status == 1;
        if (handed_over) status = 0;
    }
    int is_hls = s->iformat && s->iformat->name && strcmp(s->iformat->name, "hls") == 0 && !handed_over;
    if (status >= 0 && pb && *pb && is_hls && pb != &s->pb) {
        status = chorus_keep_segment_tag(policy, *pb);
        if (status < 0) avio_closep(pb);
    }
    av_dict_free(&own);
    if (status >= 0 && pb && *pb && is_hls && pb != &s->pb && policy->opened_count < CHORUS_RECORDED_OPENINGS && url) {
        policy->opened_urls[policy->opened_count] = av_strdup(url);
        if (policy->opened_urls[policy->opened_count]) policy->opened_count += 1;
    }
    if (status >= 0 && pb && *pb && is_hls) {
        for (int i = 0; i < CHORUS_TRACKED_INPUTS; i++) {
            if (!policy->open_inputs[i]) { policy->open_inputs[i] = *pb; break; }
        }
    }
    if (status == AVERROR(EIO)) {
        /* The https: server an http: fetch was redirected to, when its certificate refused it. */
        char redirected[2048];
        const char *refused = NULL;
        if (chorus_tls_certificate_refused(url, policy->ca_file, &s->interrupt_callback)) refused = url;
        else if (!policy->redirect_probed && url && strncasecmp(url, "http://", 7) == 0) {
            policy->redirect_probed = 1;
            if (chorus_redirected_certificate_refused(url, policy->ca_file, &s->interrupt_callback, redirected, sizeof redirected)) refused = redirected;
        }
        if (refused) {
            policy->certificate_refusals += 1;
            if (!policy->certificate_refused_url) policy->certificate_refused_url = av_strdup(refused);
        }
    }
    if (status < 0 && status != AVERROR_EXIT) {
        policy->failure_count += 1;
        policy->last_failed_status = status;
        av_freep(&policy->last_failed_url);
        policy->last_failed_url = url ? av_strdup(url) : NULL;
    }
    if (status < 0 && status != AVERROR_EXIT && policy->failed_status == 0) {
        policy->failed_status = status;
        policy->failed_url = url ? av_strdup(url) : NULL;
    }
    return status;
}

/* The io_close2 Chorus installs with chorus_io_open: counts what the input read, then
   closes it as FFmpeg's own does. */
static inline int chorus_io_close2(struct AVFormatContext *s, AVIOContext *pb) {
    ChorusFetchPolicy *policy = s ? (ChorusFetchPolicy *)s->opaque : NULL;
    if (policy && pb) {
        policy->closed_bytes += pb->bytes_read;
        for (int i = 0; i < CHORUS_TRACKED_INPUTS; i++) {
            if (policy->open_inputs[i] == pb) { policy->open_inputs[i] = NULL; break; }
        }
    }
    if (policy && policy->original_close) return policy->original_close(s, pb);
    return avio_close(pb);
}

/* Bytes `context`'s inputs have read: its own input's so far, an HLS demuxer's open
   inputs' so far, and those closed. Call on the thread reading the context, between its
   calls (the inputs are that thread's). */
static inline int64_t chorus_fetch_policy_bytes(const ChorusFetchPolicy *policy, const AVFormatContext *context) {
    if (!policy || !context) return 0;
    int64_t total = policy->closed_bytes + (context->pb ? context->pb->bytes_read : 0);
    for (int i = 0; i < CHORUS_TRACKED_INPUTS; i++) {
        if (policy->open_inputs[i]) total += policy->open_inputs[i]->bytes_read;
    }
    return total;
}

/* Makes every fetch of `context` go through chorus_io_open with `policy` (zeroed, its
   ca_file set), which becomes the context's `opaque`: call after avformat_alloc_context,
   before avformat_open_input. Returns 0, or AVERROR(EINVAL) when either is missing, the
   context has no io_open to wrap, or the context's opaque is already taken. */
static inline int chorus_fetch_policy_install(AVFormatContext *context, ChorusFetchPolicy *policy) {
    if (!context || !policy || !context->io_open || context->opaque) return AVERROR(EINVAL);
    /* Never wrap ourselves: the original would call back into chorus_io_open for ever. */
    if (context->io_open == chorus_io_open) return AVERROR(EINVAL);
    policy->original = context->io_open;
    policy->original_close = context->io_close2;
    context->opaque = policy;
    context->io_open = chorus_io_open;
    if (context->io_close2) context->io_close2 = chorus_io_close2;
    return 0;
}

/* Tag `n` of the policy's ring (`segment_tags`): its length and bytes. */
static inline int chorus_segment_tag_length(const ChorusFetchPolicy *policy, int64_t n) {
    return policy->segment_tags[n % CHORUS_SEGMENT_TAGS].length;
}
static inline const uint8_t *chorus_segment_tag_bytes(const ChorusFetchPolicy *policy, int64_t n) {
    return policy->segment_tags[n % CHORUS_SEGMENT_TAGS].bytes;
}

/* Frees what `policy` holds (the failed fetch's URL) and forgets the failure. */
static inline void chorus_fetch_policy_clear(ChorusFetchPolicy *policy) {
    if (!policy) return;
    av_freep(&policy->failed_url);
    policy->failed_status = 0;
    av_freep(&policy->last_failed_url);
    policy->last_failed_status = 0;
    av_freep(&policy->certificate_refused_url);
    policy->certificate_refusals = 0;
    for (int i = 0; i < policy->opened_count; i++) av_freep(&policy->opened_urls[i]);
    policy->opened_count = 0;
    av_freep(&policy->user_agent);
    av_freep(&policy->headers);
}

/// A scaler from one picture size and format to another that keeps each side's range (0:
/// video range, luma 16 to 235; 1: full range) in the colour matrix `colorspace` (SWS_CS_*).
/// The ranges are set before the context is initialised: swscale's same-size shortcuts
/// between YUV formats copy levels as they are, and it takes one only when both ranges are
/// known to match. NULL when the context cannot be made.
static inline struct SwsContext *chorus_sws_ranged_context(int src_w, int src_h, enum AVPixelFormat src_format,
                                                           int dst_w, int dst_h, enum AVPixelFormat dst_format,
                                                           int flags, int src_range, int dst_range, int colorspace) {
    struct SwsContext *context = sws_alloc_context();
    if (!context) return NULL;
    if (av_opt_set_int(context, "srcw", src_w, 0) < 0 || av_opt_set_int(context, "srch", src_h, 0) < 0
        || av_opt_set_int(context, "src_format", src_format, 0) < 0
        || av_opt_set_int(context, "dstw", dst_w, 0) < 0 || av_opt_set_int(context, "dsth", dst_h, 0) < 0
        || av_opt_set_int(context, "dst_format", dst_format, 0) < 0
        || av_opt_set_int(context, "sws_flags", flags, 0) < 0
        || av_opt_set_int(context, "src_range", src_range, 0) < 0 || av_opt_set_int(context, "dst_range", dst_range, 0) < 0
        || sws_init_context(context, NULL, NULL) < 0) {
        sws_freeContext(context);
        return NULL;
    }
    const int *table = sws_getCoefficients(colorspace);
    sws_setColorspaceDetails(context, table, src_range, table, dst_range, 0, 1 << 16, 1 << 16);
    return context;
}

#endif
