import Foundation
import Testing

/// `promtool check metrics` on a `/metrics` page, when promtool is installed (`.ci/run` installs it): records an
/// issue at the caller when it refuses the page or says anything. Without promtool it checks nothing, and says so in
/// the run's output (a developer's green run then proves less than CI's).
public func expectPromtoolAccepts(_ page: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let promtool = "/usr/bin/promtool"
    guard FileManager.default.isExecutableFile(atPath: promtool) else {
        print(
            "\(sourceLocation.fileName):\(sourceLocation.line): promtool is not installed (\(promtool), apt-get install prometheus): the /metrics page was not checked by it (CI checks it)"
        )
        return
    }
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-\(UUID().uuidString).txt")
    try page.write(to: file, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(at: file) }
    let (status, output) = try await ChildProcess.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "\(promtool) check metrics < '\(file.path)'"])
    #expect(status == 0 && output.isEmpty, "promtool check metrics: \(output)", sourceLocation: sourceLocation)
}
