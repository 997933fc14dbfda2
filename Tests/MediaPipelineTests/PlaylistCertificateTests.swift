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
}
