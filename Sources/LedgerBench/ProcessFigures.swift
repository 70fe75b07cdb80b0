import Foundation

/// The figures every benchmark prints beside its throughput (the brief: CPU per operation from the kernel's accounting,
/// and the load average at the time), read one way: `ledgerd bench …`, `ledgerd simulate` and the figure tests.
package enum ProcessFigures {
    /// This process's user + system CPU seconds so far (getrusage).
    package static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// CPU seconds of a process and its children from /proc: its own user + system, its reaped children's, and each
    /// live child's user + system (a backend that exits between two readings moves from the third to the second).
    package static func treeCPUSeconds(_ pid: Int) -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var total = 0.0
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for name in processes {
            guard let child = Int(name), let fields = statFields(child) else { continue }
            // After the command's ")": ppid is the 2nd field, utime the 12th, stime 13th, cutime 14th, cstime 15th.
            if child == pid {
                total += fields[11...14].compactMap { Double($0) }.reduce(0, +)
            } else if Int(fields[1]) == pid {
                total += fields[11...12].compactMap { Double($0) }.reduce(0, +)
            }
        }
        return total / ticks
    }

    /// `/proc/<pid>/stat`'s fields after the command's ")", or nil.
    static func statFields(_ pid: Int) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 14 ? fields : nil
    }

    /// `/proc/loadavg`'s three figures.
    package static func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
    }
}
