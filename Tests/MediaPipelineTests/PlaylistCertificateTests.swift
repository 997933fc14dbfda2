import Foundation
import Testing
import ChorusTestSupport
@testable import MediaPipeline
internal import CFFmpeg

/// The playlists Chorus reads itself rather than through FFmpeg's demuxer (a master
/// playlist's subtitle renditions, a live playlist followed): over HTTPS their servers'
/// certificates are checked like those of every other fetch of an item.
@Suite(.ownThread) struct PlaylistCertificateTests {
    @Test("a playlist over HTTPS is read when its server's authority is given, and refused when only another's is")
    func playlistReadsCheckTheServersCertificate() throws {
        let tone = try TestMedia.hls(seconds: 2)
        let server = try HTTPSServer(serving: tone.folder)
        let stranger = try CertificateAuthority()
        let url = server.url("index.m3u8")
        let expected = try String(contentsOf: tone.folder.appendingPathComponent("index.m3u8"), encoding: .utf8)
        #expect(HLSRenditions.readMediaPlaylist(url, interrupt: AVIOInterruptCB(), authorities: server.authority.certificate.path) == expected)
        #expect(HLSRenditions.readMediaPlaylist(url, interrupt: AVIOInterruptCB(), authorities: stranger.certificate.path) == nil)
    }

    @Test("a failed HTTPS fetch is put down to the server's certificate only when a checked handshake fails and an unchecked one succeeds")
    func certificateRefusalsAreToldFromOtherFailures() throws {
        let tone = try TestMedia.hls(seconds: 1)
        let server = try HTTPSServer(serving: tone.folder)
        let stranger = try CertificateAuthority()
        // Stopped below, once: its port then has nobody listening.
        let plain = try FaultyHTTPServer(serving: tone.folder.appendingPathComponent("index.m3u8"), fault: nil)
        let interrupt = AVIOInterruptCB()
        let trusted = server.authority.certificate.path, other = stranger.certificate.path
        withUnsafePointer(to: interrupt) { interrupt in
            // Checked against another authority, a TLS server's certificate is what fails,
            // whatever the path, or the protocol nesting HTTPS.
            #expect(chorus_tls_certificate_refused(server.url("index.m3u8"), other, interrupt) == 1)
            #expect(chorus_tls_certificate_refused("crypto+" + server.url("segment.ts"), other, interrupt) == 1)
            // Checked against its own, it is not: the fetch failed for something else.
            #expect(chorus_tls_certificate_refused(server.url("index.m3u8"), trusted, interrupt) == 0)
            // A server that speaks no TLS, and a port nobody listens on: not the certificate.
            #expect(chorus_tls_certificate_refused("https://127.0.0.1:\(plain.port)/index.m3u8", other, interrupt) == 0)
            plain.stop()
            #expect(chorus_tls_certificate_refused("https://127.0.0.1:\(plain.port)/index.m3u8", other, interrupt) == 0)
            // Not HTTPS at all, though an HTTPS address comes later in it.
            #expect(chorus_tls_certificate_refused(server.url("index.m3u8").replacingOccurrences(of: "https:", with: "http:"), other, interrupt) == 0)
            #expect(chorus_tls_certificate_refused("http://127.0.0.1:\(plain.port)/?next=" + server.url("index.m3u8"), other, interrupt) == 0)
            #expect(chorus_tls_certificate_refused(nil, other, interrupt) == 0)
        }
    }

    @Test("an http: address sent on to an https: server whose certificate does not check out is refused for that certificate, naming the server it was sent to")
    func aRedirectToARefusedServerIsToldApart() throws {
        let tone = try TestMedia.hls(seconds: 1)
        let server = try HTTPSServer(serving: tone.folder)
        let stranger = try CertificateAuthority()
        let plain = try ThrottledHTTPServer(serving: tone.folder, bytesPerSecond: 0)
        defer { plain.stop() }
        let target = server.url("index.m3u8")
        // Two hops, as a content network's address often takes: http: to http: to https:.
        plain.redirect("start.m3u8", to: plain.url("moved.m3u8"))
        plain.redirect("moved.m3u8", to: target)
        plain.redirect("elsewhere.m3u8", to: plain.url("index.m3u8"))
        let trusted = server.authority.certificate.path, other = stranger.certificate.path
        var refused = [CChar](repeating: 0, count: 2_048)
        withUnsafePointer(to: AVIOInterruptCB()) { interrupt in
            #expect(chorus_redirected_certificate_refused(plain.url("start.m3u8"), other, interrupt, &refused, refused.count) == 1)
            #expect(String(decoding: refused.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) == target)
            // Checked against its own authority the server is not refused: the fetch failed
            // for something else.
            #expect(chorus_redirected_certificate_refused(plain.url("start.m3u8"), trusted, interrupt, &refused, refused.count) == 0)
            // No redirect, or one that stays on http:, says nothing of a certificate.
            #expect(chorus_redirected_certificate_refused(plain.url("index.m3u8"), other, interrupt, &refused, refused.count) == 0)
            #expect(chorus_redirected_certificate_refused(plain.url("elsewhere.m3u8"), other, interrupt, &refused, refused.count) == 0)
            // Too little room for the address: not told, rather than cut short.
            #expect(chorus_redirected_certificate_refused(plain.url("start.m3u8"), other, interrupt, &refused, 8) == 0)
        }
        // Opened as an item, with the system's authorities (which do not know the test's):
        // the error names the https: server and its certificate, not a broken connection.
        do {
            _ = try MediaSource(url: plain.url("start.m3u8"))
            Issue.record("an untrusted server was read")
        } catch {
            let message = "\(error)"
            #expect(message.contains(target), "\(message)")
            #expect(message.contains(MediaSource.untrustedCertificate), "\(message)")
        }
    }
}
