import Foundation
import LedgerTestSupport
import Testing

/// The newcomer's path (issue 55), as the README writes it: its first screen's `make install` and `ledgerd serve`,
/// the daemon started from the PATH in a fresh directory whose `./.ledgerd` holds its data; then the quick start,
/// command by command, in one shell (its variables carry from line to line), each command's status and output checked;
/// then the console's URL from the startup log. Only the release build is skipped (`make install-files` with this
/// run's binary: 15 minutes of compiling proves nothing here), and the daemon's port comes in as `LEDGERD_PORT`
/// (which `serve`, the walk and `ledgerd settle` honour).
@Suite(.machine(.shared)) struct QuickStartTests {
    /// The commands of the README's first screen (its shell block before "## Run it"), comments dropped.
    static func firstScreenCommands() throws -> [String] {
        let readme = try String(contentsOf: TestCluster.repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let firstScreen = try #require(readme.components(separatedBy: "## Run it").first)
        let open = try #require(firstScreen.range(of: "```sh\n"))
        let close = try #require(firstScreen.range(of: "\n```", range: open.upperBound..<firstScreen.endIndex))
        return firstScreen[open.upperBound..<close.lowerBound].split(separator: "\n").map {
            $0.split(separator: "#", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        }
    }

    /// The commands of the README's "Quick start" shell block (comments and blank lines dropped, `\` lines joined).
    static func commands() throws -> [String] {
        let readme = try String(contentsOf: TestCluster.repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        guard let section = readme.range(of: "## Quick start"),
            let open = readme.range(of: "```sh\n", range: section.upperBound..<readme.endIndex),
            let close = readme.range(of: "\n```", range: open.upperBound..<readme.endIndex)
        else { return [] }
        var commands: [String] = []
        var pending = ""
        for line in readme[open.upperBound..<close.lowerBound].split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            if pending.isEmpty && (text.isEmpty || text.hasPrefix("#")) { continue }
            if text.hasSuffix("\\") {
                pending += text.dropLast() + " "
            } else {
                commands.append(pending + text)
                pending = ""
            }
        }
        return commands
    }

    @Test(.timeLimit(.minutes(4))) func theReadmesQuickStartRunsCommandByCommand() async throws {
        let commands = try Self.commands()
        #expect(commands.count >= 10, "\(commands)")
        let root = URL(fileURLWithPath: "/tmp/ledgerd-qs-\(UUID().uuidString.prefix(8))")
        let log = URL(fileURLWithPath: "\(root.path).log")
        defer {
            for url in [root, log] { try? FileManager.default.removeItem(at: url) }
        }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        // The first screen: `make install` (its install step, with this run's binary for the release build's) into a
        // prefix of its own, then `ledgerd serve` from the PATH in `root`, with no LEDGERD_MIGRATIONS_DIR: the
        // daemon finds the migrations installed beside the binary, and the shell names it `ledgerd`, not a path.
        #expect(try Self.firstScreenCommands() == ["make install", "ledgerd serve"])
        let prefix = root.appendingPathComponent("prefix")
        let install = try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/make"),
            ["-C", TestCluster.repositoryRoot.path, "install-files", "PREFIX=\(prefix.path)", "BINARY=\(DaemonProcess.binary.path)"],
            environment: ProcessInfo.processInfo.environment
        )
        try #require(install.status == 0, "\(install.output)")
        let path = "\(prefix.path)/bin:" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let port = TestPorts.free()
        let environment: [String: String?] = ["PATH": path, "LEDGERD_PORT": "\(port)", "LEDGERD_MIGRATIONS_DIR": nil]
        let daemon = try await DaemonProcess.start(
            dataDirectory: root.appendingPathComponent(".ledgerd"),
            port: port,
            logFile: log,
            environment: environment,
            command: (URL(fileURLWithPath: "/bin/sh"), ["-c", "exec ledgerd serve"]),
            directory: root
        )
        guard daemon.health != nil else {
            daemon.process.terminate()
            Issue.record("no /health answer; daemon output:\n\(daemon.output())")
            return
        }
        // The copy of the migrations it applied: the installed one (it once looked under the working directory for
        // `ledgerd`'s bare name and fell back to the source tree this binary was built from).
        #expect(
            daemon.output().contains("migrations=\(prefix.path)/share/ledgerd/sql "),
            "\(daemon.output().split(separator: "\n").filter { $0.contains("ledger database ready") }.joined(separator: "\n"))"
        )
        var script = "cd '\(root.path)'\n"
        for (index, command) in commands.enumerated() {
            // As written: `ledgerd` is the installed one on the PATH.
            let runnable = command.replacingOccurrences(of: "swift run ledgerd", with: "ledgerd")
            script += "{ \(runnable)\n} > '\(root.path)/out.\(index)' 2>&1; echo $? > '\(root.path)/rc.\(index)'\n"
        }
        // The README's payment line with a declined card: it must fail visibly, `ORDER` empty (it once became "null").
        let payment = try #require(commands.first { $0.hasPrefix("ORDER=$(") })
        let declined = payment.replacingOccurrences(of: "tok_visa", with: "tok_chargeDeclined")
            .replacingOccurrences(of: "cart-1", with: "cart-declined")
        script +=
            "{ \(declined)\n} > '\(root.path)/out.declined' 2>&1; echo $? > '\(root.path)/rc.declined'; echo \"[$ORDER]\" > '\(root.path)/order.declined'\n"
        _ = try await ChildProcess.run(
            URL(fileURLWithPath: "/bin/bash"),
            ["-c", script],
            environment: DaemonProcess.environment(environment.merging(["LEDGERD_LOG_LEVEL": "warning"]) { $1 })
        )

        var outputs: [String] = []
        for (index, command) in commands.enumerated() {
            let status = (try? String(contentsOfFile: "\(root.path)/rc.\(index)", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            let output = (try? String(contentsOfFile: "\(root.path)/out.\(index)", encoding: .utf8)) ?? ""
            outputs.append(output)
            #expect(status == "0", "README command \(index + 1) failed (\(status ?? "not run")): \(command)\n\(output)")
        }
        let all = outputs.joined(separator: "\n")
        #expect(all.contains(#""status":"up""#) || all.contains(#""status": "up""#), "health")
        #expect(all.contains("Clock"), "the inventory lists the demo catalog")
        #expect(all.contains("shipped"), "the order shipped")
        #expect(all.contains("OrderShipped"), "the history shows the shipment")
        #expect(all.contains("settling the open business day"), "ledgerd settle --today says which day it closes")
        #expect(all.contains("closed early at") && all.contains("payout_scheduled"), "the day was settled: a batch with its payout")
        let reconciliation = try #require(outputs.first { $0.contains(#""reconciliations""#) }, "the reconciliation was shown")
        let reply = try JSONSerialization.jsonObject(with: Data(reconciliation.utf8)) as? [String: Any]
        #expect((reply?["breaks"] as? [Any])?.isEmpty == true && (reply?["matched"] as? Int) == 2, "\(reconciliation)")
        #expect(all.contains("rows)"), "psql answered")
        // The auditor's psql session re-hashes the chain: one row, ok.
        let verified = try #require(outputs.last)
        #expect(verified.contains(" t ") && verified.contains("(1 row)"), "\(verified)")
        #expect(!all.contains("internal_error"))
        let declinedStatus = (try? String(contentsOfFile: "\(root.path)/rc.declined", encoding: .utf8)) ?? ""
        let declinedOutput = (try? String(contentsOfFile: "\(root.path)/out.declined", encoding: .utf8)) ?? ""
        let declinedOrder = (try? String(contentsOfFile: "\(root.path)/order.declined", encoding: .utf8)) ?? ""
        #expect(declinedStatus.trimmingCharacters(in: .whitespacesAndNewlines) != "0", "a declined payment's line fails: \(declinedOutput)")
        #expect(declinedOutput.contains("the payment failed"), "\(declinedOutput)")
        #expect(declinedOrder == "[]\n", "ORDER is empty, not \(declinedOrder)")
        // The newcomer's next step: the console's URL from the daemon's startup log answers with the sign-in page,
        // and the log says where the keys to sign in with are.
        let startup = daemon.output()
        let line = try #require(startup.split(separator: "\n").first { $0.contains("console: http://") }, "\(startup)")
        let url = try #require(line.split(separator: " ").first { $0.hasPrefix("http://") }.map { String($0) })
        #expect(url == "http://127.0.0.1:\(daemon.port)/console/sign-in", "\(line)")
        #expect(line.contains("\(root.path)/.ledgerd/api-keys.json"), "\(line)")
        let signIn = await DaemonProcess.get(try #require(URL(string: url)))
        #expect(signIn?.0 == 200 && signIn?.1.contains("<form") == true && signIn?.1.contains("sign-in") == true, "\(String(describing: signIn))")
        try await daemon.stop()
    }

    /// The README's first screen: the daemon's two commands are `make install` and `ledgerd serve` (the quick start's daemon,
    /// which ``theReadmesQuickStartRunsCommandByCommand`` starts as `ledgerd serve` and follows to the console), and
    /// `make install` builds the release binary and puts it and its migrations under PREFIX (a dry run: the release
    /// build itself takes 15 minutes).
    @Test func theReadmesFirstScreenInstallsLedgerdOnThePath() async throws {
        let readme = try String(contentsOf: TestCluster.repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let firstScreen = try #require(readme.components(separatedBy: "## Run it").first)
        let commands = try Self.firstScreenCommands()
        #expect(commands == ["make install", "ledgerd serve"], "\(commands)")
        // And the other command a newcomer runs first: the tests (the house's rule: the README starts with both).
        #expect(firstScreen.contains("```sh\nswift test\n```"), "the first screen names the tests' command")
        #expect(firstScreen.contains("![") && firstScreen.contains("docs/console-today.png"), "the screenshot is on the first screen")
        #expect(FileManager.default.fileExists(atPath: TestCluster.repositoryRoot.appendingPathComponent("docs/console-today.png").path))
        let make = try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/make"),
            ["-n", "-C", TestCluster.repositoryRoot.path, "install", "PREFIX=/tmp/ledgerd-prefix"],
            environment: ProcessInfo.processInfo.environment
        )
        #expect(make.status == 0, "\(make.output)")
        #expect(make.output.contains("swift build -c release --product ledgerd"), "\(make.output)")
        #expect(make.output.contains("install -m 0755 \".build/release/ledgerd\" \"/tmp/ledgerd-prefix/bin/ledgerd\""), "\(make.output)")
        #expect(make.output.contains("/tmp/ledgerd-prefix/share/ledgerd/sql/acquirer/"), "the migrations beside it, the acquirer's too")
    }

    /// Every relative link of the README and of docs/*.md (outside code blocks) names a file or directory that exists,
    /// and every `#anchor` of the README names one of its headings: the README's details live in docs/ (issue 55), and a
    /// moved section must not leave a link behind that leads nowhere.
    @Test func everyRelativeLinkOfTheReadmeAndTheDocsLeadsSomewhere() throws {
        let root = TestCluster.repositoryRoot
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.map { "docs/\($0)" }
        #expect(docs.count >= 10, "\(docs)")
        var broken: [String] = []
        var links = 0
        for file in ["README.md"] + docs.sorted() {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            // Outside fenced code blocks (the even-numbered pieces).
            let prose = text.components(separatedBy: "```").enumerated().filter { $0.offset % 2 == 0 }.map(\.element).joined()
            let headings = Set(
                prose.split(separator: "\n").filter { $0.hasPrefix("#") }.map { Self.anchor(of: String($0.drop { $0 == "#" })) }
            )
            for match in prose.matches(of: /\]\(([^)\s]+)\)/) {
                let target = String(match.output.1)
                if target.contains("://") || target.hasPrefix("mailto:") { continue }
                links += 1
                if target.hasPrefix("#") {
                    if !headings.contains(String(target.dropFirst())) { broken.append("\(file): \(target) (no such heading)") }
                    continue
                }
                let path = String(target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0])
                let resolved = root.appendingPathComponent(file).deletingLastPathComponent().appendingPathComponent(path).standardizedFileURL
                if !FileManager.default.fileExists(atPath: resolved.path) { broken.append("\(file): \(target)") }
            }
        }
        #expect(links >= 20, "the links were found (\(links))")
        #expect(broken.isEmpty, "links that lead nowhere:\n\(broken.joined(separator: "\n"))")
    }

    /// A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens.
    static func anchor(of heading: String) -> String {
        String(
            heading.trimmingCharacters(in: .whitespaces).lowercased().compactMap { character -> Character? in
                character == " " ? "-" : character.isLetter || character.isNumber || character == "-" || character == "_" ? character : nil
            }
        )
    }

    /// With no daemon at `LEDGERD_PORT`, a back-office command says so in one line (no raw error dump) and exits 1.
    @Test func withTheDaemonDownTheCLISaysSoInOneLine() async throws {
        let port = TestPorts.free()
        let result = try await DaemonProcess.run(
            ["order", "capture", "3f0c0a36-0000-4000-8000-000000000000", "--api-key", "k"],
            environment: DaemonProcess.environment(["LEDGERD_PORT": "\(port)", "LEDGERD_LOG_LEVEL": "warning"])
        )
        let lines = result.output.split(separator: "\n")
        #expect(result.status == 1)
        #expect(
            lines.count == 1 && lines[0].contains("cannot reach the daemon at http://127.0.0.1:\(port): connection refused"),
            "\(result.output)"
        )
        #expect(!result.output.contains("NSURLErrorDomain") && !result.output.contains("Error Domain"))
    }

    /// A server that takes the request and closes the connection without an answer: the capture may have been
    /// applied, so the one line names the idempotency key to send again (the same key cannot apply it twice).
    @Test(.timeLimit(.minutes(1))) func aConnectionClosedBeforeTheAnswerNamesTheKeyToRetryWith() async throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(listener >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        try #require(bound && listen(listener, 16) == 0)
        let port = Int(UInt16(bigEndian: address.sin_port))
        // Accepts on a thread of its own (a blocking accept would hold one of the test pool's threads): reads the request's
        // head, then closes without a byte of answer.
        let server = Thread {
            while true {
                let connection = accept(listener, nil, nil)
                if connection < 0 { return }
                var buffer = [UInt8](repeating: 0, count: 64 * 1024)
                _ = read(connection, &buffer, buffer.count)
                close(connection)
            }
        }
        server.start()
        defer {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }
        let result = try await DaemonProcess.run(
            [
                "order", "capture", "3f0c0a36-0000-4000-8000-000000000000", "--api-key", "k", "--url", "http://127.0.0.1:\(port)",
                "--idempotency-key", "capture-retry-1",
            ],
            environment: DaemonProcess.environment(["LEDGERD_LOG_LEVEL": "warning"])
        )
        let lines = result.output.split(separator: "\n")
        #expect(result.status == 1)
        #expect(
            lines.count == 1 && lines[0].contains("cannot reach the daemon at http://127.0.0.1:\(port): the connection was closed")
                && lines[0].contains("run it again with --idempotency-key capture-retry-1"),
            "\(result.output)"
        )
    }
}
