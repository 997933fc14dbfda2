import Foundation

/// A certificate authority made for a test (openssl), in a folder of its own under
/// `TestMedia.folder`: its certificate's file, and the server certificates for 127.0.0.1
/// it signs.
public final class CertificateAuthority: Sendable {
    /// The folder its keys and certificates are in.
    public let folder: URL
    /// Its own certificate (PEM): what CHORUS_CA_FILE names to trust it.
    public let certificate: URL

    public init() throws {
        folder = TestMedia.folder.appendingPathComponent("tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data("subjectAltName=IP:127.0.0.1\n".utf8).write(to: folder.appendingPathComponent("san.cnf"))
        certificate = folder.appendingPathComponent("ca.pem")
        try Self.openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path("ca.key"), "-out", certificate.path,
                          "-days", "2", "-subj", "/CN=Chorus test authority"])
    }

    private func path(_ name: String) -> String { folder.appendingPathComponent(name).path }

    /// A new key, and a certificate for it as the server at 127.0.0.1, signed here: the
    /// files' paths.
    public func serverCertificate() throws -> (certificate: String, key: String) {
        let name = "server-\(UUID().uuidString)"
        try Self.openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", path("\(name).key"), "-out", path("\(name).csr"),
                          "-subj", "/CN=127.0.0.1"])
        try Self.openssl(["x509", "-req", "-in", path("\(name).csr"), "-CA", certificate.path, "-CAkey", path("ca.key"),
                          "-CAcreateserial", "-out", path("\(name).pem"), "-days", "2", "-extfile", path("san.cnf")])
        return (path("\(name).pem"), path("\(name).key"))
    }

    /// One file holding the certificate of every authority in `authorities`: trusting all
    /// of them through one CHORUS_CA_FILE.
    public static func bundle(_ authorities: [CertificateAuthority]) throws -> URL {
        let file = TestMedia.folder.appendingPathComponent("tls-bundle-\(UUID().uuidString).pem")
        try authorities.map { try Data(contentsOf: $0.certificate) }.reduce(Data(), +).write(to: file)
        return file
    }

    private static func openssl(_ arguments: [String]) throws {
        let made = try Run.command("openssl", arguments, timeout: 60)
        guard made.status == 0 else { throw HTTPSServer.SetUpFailure(reason: "openssl: \(made.standardError)") }
    }
}

/// A local HTTPS server (Python's) serving a folder, with a certificate for 127.0.0.1 signed
/// by `authority`: by default one made for it alone, which nothing else trusts. It ends
/// when the object goes, and by itself after `serverLifetime` seconds whatever happens.
public final class HTTPSServer {
    /// Why a server could not be set up.
    public struct SetUpFailure: Error, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }

    private let process = Process()
    /// The loopback port it listens on.
    public let port: Int
    /// The authority that signed its certificate.
    public let authority: CertificateAuthority

    /// How long a server lives at most, in seconds: far beyond a test's few short plays.
    public static let serverLifetime = 120

    public init(serving folder: URL, authority: CertificateAuthority? = nil) throws {
        self.authority = try authority ?? CertificateAuthority()
        let server = try self.authority.serverCertificate()
        // It unblocks the signals the test process passes on blocked, so that `terminate`
        // ends it, and ends itself after `serverLifetime` seconds whatever happens.
        let script = """
            import http.server, ssl, sys, os, signal
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGALRM})
            signal.alarm(int(sys.argv[4]))
            os.chdir(sys.argv[1])
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(sys.argv[2], sys.argv[3])
            server.socket = context.wrap_socket(server.socket, server_side=True)
            print(server.server_address[1], flush=True)
            server.serve_forever()
            """
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, folder.path, server.certificate, server.key, String(Self.serverLifetime)]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty { break }
            line += byte
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.terminate()
            throw SetUpFailure(reason: "the HTTPS server did not start")
        }
        self.port = port
    }

    deinit { process.terminate() }

    /// The address of `name` in the folder served.
    public func url(_ name: String) -> String { "https://127.0.0.1:\(port)/\(name)" }
}
