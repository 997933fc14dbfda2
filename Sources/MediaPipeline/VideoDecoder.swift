internal import CFFmpeg

/// One video stream's decoder, with the conversion to a layout a display takes.
///
/// Used by its reader's thread only. Frame threading is on (as many threads as the codec
/// and machine allow): an H.264 1080p stream decodes several frames at once, which is how
/// ffplay and mpv keep up on small machines. Pictures already in I420 or NV12 pass through
/// by reference; anything else (4:2:2, 4:4:4, 10-bit, RGB) is converted to I420 by
/// libswscale into the queue's slot.
final class VideoDecoder {
    /// The largest picture side accepted, in pixels: 16384 is what H.264's and HEVC's top
    /// levels allow and more than any display; a larger size in a file is damage or a trap.
    static let maximumSide = 16384

    let url: String
    let streamIndex: Int32
    let timeBase: AVRational
    /// The nominal frame period, in nanoseconds, for pictures whose container gives none.
    let nominalFrameNanoseconds: Int64
    private let codec: UnsafeMutablePointer<AVCodecContext>
    private let frame: UnsafeMutablePointer<AVFrame>
    private var scaler: OpaquePointer?
    private var scalerInput: (width: Int32, height: Int32, format: Int32)?

    init(source: MediaSource, track: TrackInfo) throws(MediaError) {
        url = source.url
        streamIndex = Int32(track.streamIndex)
        guard let stream = source.formatContext.pointee.streams[track.streamIndex],
              let parameters = stream.pointee.codecpar else {
            throw .noPlayableTrack(url: source.url)
        }
        let width = Int(parameters.pointee.width), height = Int(parameters.pointee.height)
        guard width > 0, height > 0, width <= Self.maximumSide, height <= Self.maximumSide else {
            throw .corruptData(url: source.url, reason: "video size \(width)×\(height) is outside 1…\(Self.maximumSide) pixels a side")
        }
        let rotation = track.rotationDegrees
        guard rotation.isFinite, (rotation / 90).rounded() * 90 == rotation else {
            throw .unsupportedFormat(url: source.url, reason: "video rotation of \(rotation)° is not a quarter turn")
        }
        timeBase = stream.pointee.time_base
        let rate = stream.pointee.avg_frame_rate.num > 0 && stream.pointee.avg_frame_rate.den > 0
            ? stream.pointee.avg_frame_rate : stream.pointee.r_frame_rate
        nominalFrameNanoseconds = rate.num > 0 && rate.den > 0
            ? Int64(rate.den) * 1_000_000_000 / Int64(rate.num) : 40_000_000
        guard let decoder = avcodec_find_decoder(parameters.pointee.codec_id) else {
            let name = avcodec_get_name(parameters.pointee.codec_id).map { String(cString: $0) } ?? "unknown"
            throw .unsupportedFormat(url: source.url, reason: "no decoder for video codec \(name)")
        }
        guard let context = avcodec_alloc_context3(decoder), let decoded = av_frame_alloc() else {
            throw .outputFailure(device: source.url, reason: "out of memory")
        }
        codec = context
        frame = decoded
        var status = avcodec_parameters_to_context(context, parameters)
        if status >= 0 {
            context.pointee.pkt_timebase = stream.pointee.time_base
            context.pointee.thread_count = 0
            context.pointee.thread_type = chorus_thread_frame_and_slice()
            status = avcodec_open2(context, decoder, nil)
        }
        if status < 0 {
            throw .unsupportedFormat(url: source.url, reason: "cannot open the video decoder: \(FFmpegCall.message(status))")
        }
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = codec
        avcodec_free_context(&context)
        var decoded: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&decoded)
        sws_freeContext(scaler)
    }

    func send(_ packet: UnsafeMutablePointer<AVPacket>?) -> Int32 { avcodec_send_packet(codec, packet) }

    func flush() { avcodec_flush_buffers(codec) }

    /// A decoded picture, still in the decoder's frame: its timestamp (stream time base,
    /// nil when the codec gave none) and duration (stream time base, 0 when unknown).
    struct Decoded {
        var pts: Int64?
        var duration: Int64
        var width: Int
        var height: Int
    }

    /// Receives the next picture; nil when the decoder needs more input or is drained.
    func receive() -> Result<Decoded, FFmpegStatus>? {
        let status = avcodec_receive_frame(codec, frame)
        if status == FFmpegCall.again || status == FFmpegCall.eof { return nil }
        if status < 0 { return .failure(FFmpegStatus(code: status)) }
        let f = frame.pointee
        guard f.width > 0, f.height > 0, Int(f.width) <= Self.maximumSide, Int(f.height) <= Self.maximumSide else {
            av_frame_unref(frame)
            return .failure(FFmpegStatus(code: FFmpegCall.invalidData))
        }
        let pts = f.best_effort_timestamp
        return .success(Decoded(pts: pts == FFmpegCall.noPTS ? nil : pts, duration: max(0, f.pkt_duration),
                                width: Int(f.width), height: Int(f.height)))
    }

    /// Drops the received picture without using it.
    func discard() { av_frame_unref(frame) }

    /// Moves the received picture into `slot` (by reference when its layout displays as is,
    /// converted otherwise), and says its layout and colours.
    func move(into slot: UnsafeMutablePointer<AVFrame>) -> Result<(VideoPixelFormat, VideoColorMatrix), FFmpegStatus> {
        move(from: frame, into: slot)
    }

    /// Moves the received picture into `held` by reference, as it was decoded (`held`
    /// gives up what it held): kept aside for `move(from:into:)` later, at no cost.
    func hold(into held: UnsafeMutablePointer<AVFrame>) {
        av_frame_unref(held)
        av_frame_move_ref(held, frame)
    }

    /// Moves the picture in `source` (the received one, or one held) into `slot`, as
    /// `move(into:)` does; `source` is empty afterwards.
    func move(from source: UnsafeMutablePointer<AVFrame>,
              into slot: UnsafeMutablePointer<AVFrame>) -> Result<(VideoPixelFormat, VideoColorMatrix), FFmpegStatus> {
        defer { av_frame_unref(source) }
        let f = source.pointee
        let matrix: VideoColorMatrix
        if f.color_range == AVCOL_RANGE_JPEG || f.format == AV_PIX_FMT_YUVJ420P.rawValue {
            matrix = .fullRange601
        } else if f.colorspace == AVCOL_SPC_BT709 || (f.colorspace == AVCOL_SPC_UNSPECIFIED && f.height > 576) {
            // Unspecified HD is BT.709 by every player's convention.
            matrix = .bt709
        } else {
            matrix = .bt601
        }
        switch f.format {
        case AV_PIX_FMT_YUV420P.rawValue, AV_PIX_FMT_YUVJ420P.rawValue:
            av_frame_move_ref(slot, source)
            return .success((.yuv420p, matrix))
        case AV_PIX_FMT_NV12.rawValue:
            av_frame_move_ref(slot, source)
            return .success((.nv12, matrix))
        default:
            return convert(source, into: slot).map { (.yuv420p, matrix) }
        }
    }

    private func convert(_ source: UnsafeMutablePointer<AVFrame>, into slot: UnsafeMutablePointer<AVFrame>) -> Result<Void, FFmpegStatus> {
        let f = source.pointee
        let key = (width: f.width, height: f.height, format: f.format)
        if scaler == nil || scalerInput.map({ $0 != key }) ?? true {
            sws_freeContext(scaler)
            // Same size, only the layout changes: a bilinear filter is exact at 1:1 for luma
            // and a fair resampling of chroma.
            scaler = sws_getContext(f.width, f.height, AVPixelFormat(rawValue: f.format), f.width, f.height,
                                    AV_PIX_FMT_YUV420P, Int32(SWS_BILINEAR), nil, nil, nil)
            scalerInput = scaler == nil ? nil : key
        }
        guard let scaler else { return .failure(FFmpegStatus(code: FFmpegCall.invalidData)) }
        slot.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        slot.pointee.width = f.width
        slot.pointee.height = f.height
        var status = av_frame_get_buffer(slot, 0)
        guard status >= 0 else { return .failure(FFmpegStatus(code: status)) }
        // The planes' addresses and strides, copied out as values: sws_scale reads them
        // through pointers to arrays of eight.
        var sourcePlanes = source.pointee.data
        var sourceStrides = source.pointee.linesize
        var targetPlanes = slot.pointee.data
        var targetStrides = slot.pointee.linesize
        status = withUnsafePointer(to: &sourcePlanes) { sourceTuple in
            withUnsafePointer(to: &sourceStrides) { inTuple in
                withUnsafeMutablePointer(to: &targetPlanes) { targetTuple in
                    withUnsafePointer(to: &targetStrides) { outTuple in
                        let input = UnsafeRawPointer(sourceTuple).assumingMemoryBound(to: UnsafePointer<UInt8>?.self)
                        let inStrides = UnsafeRawPointer(inTuple).assumingMemoryBound(to: Int32.self)
                        let output = UnsafeMutableRawPointer(targetTuple).assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
                        let outStrides = UnsafeRawPointer(outTuple).assumingMemoryBound(to: Int32.self)
                        return sws_scale(scaler, input, inStrides, 0, f.height, output, outStrides)
                    }
                }
            }
        }
        return status < 0 ? .failure(FFmpegStatus(code: status)) : .success(())
    }
}
