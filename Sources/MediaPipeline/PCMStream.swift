import Foundation
internal import CALSA

/// One opened ALSA playback stream: the PCM handle, its status buffer, what the device was
/// configured to, and the PulseAudio probe that times it (through ALSA's `pulse` plugin).
///
/// A value, not a class that closes itself when let go: its owner moves between threads
/// (`ALSAOutput`'s render thread plays it, `StreamReopener`'s threads open and close it),
/// and the render thread must never be the one to close it. Exactly one owner holds it at a
/// time, and that owner calls `close()` once.
// @unchecked: the pointers are used by one thread at a time, as said above.
struct PCMStream: @unchecked Sendable {
    let handle: OpaquePointer
    let status: OpaquePointer
    /// The configuration it was opened in, when not the system's (freed with the stream:
    /// the plugins may keep pointers into it).
    let configuration: OpaquePointer?
    let format: AudioFormat
    let periodFrames: Int
    let bufferFrames: Int
    /// Asks the sound server for the stream's latency, when the device is a plugin.
    var probe: PulseLatencyProbe?

    /// Opens `device` for interleaved float with monotonic timestamps, as close to
    /// `preferred` as it allows, with a buffer of `bufferDuration` in periods of
    /// `periodDuration`, starting at the first period. `configuration` (ALSA's syntax)
    /// replaces the system's configuration for this open; `name` is the output's, for errors.
    static func open(device: String, configuration: String?, preferred: AudioFormat,
                     bufferDuration: Duration, periodDuration: Duration, name: String) throws(MediaError) -> PCMStream {
        func failure(_ what: String, _ code: Int32) -> MediaError {
            .outputFailure(device: name, reason: "\(what): \(String(cString: snd_strerror(code)))")
        }
        chorus_alsa_quiet()
        var local: OpaquePointer?
        if let configuration {
            var input: OpaquePointer?
            var code = snd_config_top(&local)
            if code >= 0 { code = snd_input_buffer_open(&input, configuration, configuration.utf8.count) }
            if code >= 0, let input {
                code = snd_config_load(local, input)
                snd_input_close(input)
            }
            guard code >= 0 else {
                if let local { snd_config_delete(local) }
                throw failure("cannot read the configuration", code)
            }
        }
        var opened: OpaquePointer?
        var code = local.map { snd_pcm_open_lconf(&opened, device, SND_PCM_STREAM_PLAYBACK, 0, $0) }
            ?? snd_pcm_open(&opened, device, SND_PCM_STREAM_PLAYBACK, 0)
        guard code >= 0, let handle = opened else {
            if let local { snd_config_delete(local) }
            throw failure("cannot open", code)
        }
        var statusHandle: OpaquePointer?
        func abandon(_ what: String, _ code: Int32) -> MediaError {
            snd_pcm_close(handle)
            if let statusHandle { snd_pcm_status_free(statusHandle) }
            if let local { snd_config_delete(local) }
            return failure(what, code)
        }

        var hw: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&hw) >= 0, let hw else { throw abandon("out of memory", -ENOMEM) }
        defer { snd_pcm_hw_params_free(hw) }
        code = snd_pcm_hw_params_any(handle, hw)
        if code >= 0 { code = snd_pcm_hw_params_set_access(handle, hw, SND_PCM_ACCESS_RW_INTERLEAVED) }
        if code >= 0 { code = snd_pcm_hw_params_set_format(handle, hw, SND_PCM_FORMAT_FLOAT_LE) }
        guard code >= 0 else { throw abandon("does not take 32-bit float samples", code) }
        var channels = UInt32(preferred.channels)
        code = snd_pcm_hw_params_set_channels_near(handle, hw, &channels)
        var rate = UInt32(preferred.sampleRate)
        if code >= 0 { code = snd_pcm_hw_params_set_rate_near(handle, hw, &rate, nil) }
        var bufferMicros = UInt32(bufferDuration.components.attoseconds / 1_000_000_000_000)
        var periodMicros = UInt32(periodDuration.components.attoseconds / 1_000_000_000_000)
        if code >= 0 { code = snd_pcm_hw_params_set_buffer_time_near(handle, hw, &bufferMicros, nil) }
        if code >= 0 { code = snd_pcm_hw_params_set_period_time_near(handle, hw, &periodMicros, nil) }
        if code >= 0 { code = snd_pcm_hw_params(handle, hw) }
        guard code >= 0 else { throw abandon("cannot configure \(preferred)", code) }
        var period: snd_pcm_uframes_t = 0
        var buffer: snd_pcm_uframes_t = 0
        snd_pcm_hw_params_get_period_size(hw, &period, nil)
        snd_pcm_hw_params_get_buffer_size(hw, &buffer)
        let periodFrames = max(1, Int(period))
        let bufferFrames = max(periodFrames, Int(buffer))

        var sw: OpaquePointer?
        guard snd_pcm_sw_params_malloc(&sw) >= 0, let sw else { throw abandon("out of memory", -ENOMEM) }
        defer { snd_pcm_sw_params_free(sw) }
        code = snd_pcm_sw_params_current(handle, sw)
        if code >= 0 { code = snd_pcm_sw_params_set_avail_min(handle, sw, snd_pcm_uframes_t(periodFrames)) }
        // Start as soon as the first period is queued, so start time is what timing predicts.
        if code >= 0 { code = snd_pcm_sw_params_set_start_threshold(handle, sw, snd_pcm_uframes_t(periodFrames)) }
        if code >= 0 { code = snd_pcm_sw_params_set_tstamp_mode(handle, sw, SND_PCM_TSTAMP_ENABLE) }
        if code >= 0 { code = snd_pcm_sw_params_set_tstamp_type(handle, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC) }
        if code >= 0 { code = snd_pcm_sw_params(handle, sw) }
        guard code >= 0 else { throw abandon("cannot set software parameters", code) }
        guard snd_pcm_status_malloc(&statusHandle) >= 0, let status = statusHandle else { throw abandon("out of memory", -ENOMEM) }
        code = snd_pcm_prepare(handle)
        guard code >= 0 else { throw abandon("cannot prepare", code) }
        return PCMStream(handle: handle, status: status, configuration: local,
                         format: AudioFormat(sampleRate: Int(rate), channels: Int(channels)),
                         periodFrames: periodFrames, bufferFrames: bufferFrames)
    }

    /// Whether the device is a plugin with a server behind it to ask (PulseAudio's, in
    /// practice); a card has none.
    var isPlugin: Bool { snd_pcm_type(handle) == SND_PCM_TYPE_IOPLUG }

    /// Stops the probe and closes the device (through a sound server's plugin, this may wait
    /// on the server for as long as it does not answer).
    func close() {
        probe?.stop()
        snd_pcm_close(handle)
        snd_pcm_status_free(status)
        if let configuration { snd_config_delete(configuration) }
    }
}
