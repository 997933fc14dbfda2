internal import CFFmpeg

/// One audio stream's decoder and the converter to the ring's format.
///
/// Used by the reader thread only. Converts whatever the codec produces (any sample format,
/// rate and layout, which may change mid-stream) to interleaved float at the output format.
final class AudioDecoder {
    let url: String
    let streamIndex: Int32
    let timeBase: AVRational
    let output: AudioFormat
    private let codec: UnsafeMutablePointer<AVCodecContext>
    private var frame: UnsafeMutablePointer<AVFrame>
    private var resampler: OpaquePointer?
    /// The input parameters `resampler` was built for; a change rebuilds it.
    private var resamplerInput: (rate: Int32, format: Int32, channels: Int32, layoutHash: UInt64)?
    /// Converted samples; grown on the reader thread only, never on the audio thread.
    private(set) var converted: UnsafeMutablePointer<Float>
    private var convertedCapacity: Int

    init(source: MediaSource, streamIndex: Int32, output: AudioFormat) throws(MediaError) {
        url = source.url
        self.streamIndex = streamIndex
        self.output = output
        guard let stream = source.formatContext.pointee.streams[Int(streamIndex)],
              let parameters = stream.pointee.codecpar else {
            throw .noPlayableTrack(url: source.url)
        }
        timeBase = stream.pointee.time_base
        guard let decoder = avcodec_find_decoder(parameters.pointee.codec_id) else {
            let name = avcodec_get_name(parameters.pointee.codec_id).map { String(cString: $0) } ?? "unknown"
            throw .unsupportedFormat(url: source.url, reason: "no decoder for \(name)")
        }
        guard let context = avcodec_alloc_context3(decoder), let decodedFrame = av_frame_alloc() else {
            throw .outputFailure(device: source.url, reason: "out of memory")
        }
        codec = context
        frame = decodedFrame
        convertedCapacity = AudioRing.framesPerBlock * 4
        converted = .allocate(capacity: convertedCapacity * output.channels)
        var status = avcodec_parameters_to_context(context, parameters)
        if status >= 0 {
            context.pointee.pkt_timebase = stream.pointee.time_base
            status = avcodec_open2(context, decoder, nil)
        }
        if status < 0 {
            throw .unsupportedFormat(url: source.url, reason: "cannot open decoder: \(FFmpegCall.message(status))")
        }
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = codec
        avcodec_free_context(&context)
        var decoded: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&decoded)
        swr_free(&resampler)
        converted.deallocate()
    }

    /// Sends one packet (nil to drain at the end). Returns FFmpeg's status; invalid data is
    /// reported to the caller, which counts it and carries on.
    func send(_ packet: UnsafeMutablePointer<AVPacket>?) -> Int32 {
        avcodec_send_packet(codec, packet)
    }

    /// Drops everything buffered in the decoder and converter, after a seek.
    func flush() {
        avcodec_flush_buffers(codec)
        resamplerInput = nil
        swr_free(&resampler)
    }

    /// A decoded and converted frame: where it starts in stream time base, and its samples.
    struct Decoded {
        /// Presentation time in the stream's time base, or nil when the codec gave none.
        var pts: Int64?
        var frames: Int
    }

    /// Receives the next decoded frame and converts it into `converted`.
    /// Returns nil when the decoder needs more input or is drained; throws on a real error.
    func receive() -> Result<Decoded, FFmpegStatus>? {
        let status = avcodec_receive_frame(codec, frame)
        if status == FFmpegCall.again || status == FFmpegCall.eof { return nil }
        if status < 0 { return .failure(FFmpegStatus(code: status)) }
        defer { av_frame_unref(frame) }
        let pts = frame.pointee.best_effort_timestamp
        let count: Int
        switch convert() {
        case .success(let frames): count = frames
        case .failure(let status): return .failure(status)
        }
        return .success(Decoded(pts: pts == FFmpegCall.noPTS ? nil : pts, frames: count))
    }

    private func convert() -> Result<Int, FFmpegStatus> {
        let f = frame.pointee
        var layout = f.ch_layout
        if chorus_layout_is_unspecified(&layout) != 0 {
            let channels = max(Int32(1), layout.nb_channels)
            chorus_default_layout(&layout, channels)
        }
        let key = (rate: f.sample_rate, format: f.format, channels: layout.nb_channels, layoutHash: layout.u.mask)
        if resampler == nil || resamplerInput.map({ $0 != key }) ?? true {
            swr_free(&resampler)
            var outLayout = AVChannelLayout()
            // Same channel count: keep the source's layout so no remix happens and samples
            // pass through unchanged. Otherwise mix to the output's default layout.
            if Int(layout.nb_channels) == output.channels {
                av_channel_layout_copy(&outLayout, &layout)
            } else {
                chorus_default_layout(&outLayout, Int32(output.channels))
            }
            let status = swr_alloc_set_opts2(&resampler, &outLayout, AV_SAMPLE_FMT_FLT, Int32(output.sampleRate),
                                             &layout, AVSampleFormat(rawValue: f.format), f.sample_rate, 0, nil)
            av_channel_layout_uninit(&outLayout)
            if status < 0 { return .failure(FFmpegStatus(code: status)) }
            let initStatus = swr_init(resampler)
            if initStatus < 0 { swr_free(&resampler); return .failure(FFmpegStatus(code: initStatus)) }
            resamplerInput = key
        }
        let needed = Int(swr_get_out_samples(resampler, f.nb_samples))
        if needed > convertedCapacity {
            converted.deallocate()
            convertedCapacity = needed * 2
            converted = .allocate(capacity: convertedCapacity * output.channels)
        }
        let input = UnsafeMutableRawPointer(f.extended_data).map { $0.assumingMemoryBound(to: UnsafePointer<UInt8>?.self) }
        var outPointer: UnsafeMutablePointer<UInt8>? = UnsafeMutableRawPointer(converted).assumingMemoryBound(to: UInt8.self)
        let produced = swr_convert(resampler, &outPointer, Int32(convertedCapacity), input, f.nb_samples)
        if produced < 0 { return .failure(FFmpegStatus(code: produced)) }
        return .success(Int(produced))
    }
}
