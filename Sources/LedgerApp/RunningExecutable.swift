import Foundation

/// The file this process runs, found through `/proc/self/exe` with its symbolic links resolved. Not
/// `CommandLine.arguments[0]`: started from the PATH (after `make install`) that is the bare name `ledgerd`, or a path
/// relative to a working directory the process may since have left, so files beside the binary were looked for under
/// the working directory instead.
public enum RunningExecutable {
    /// The real path of the running binary (a symbolic link on the PATH resolved to the file it names).
    public static var url: URL { URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath() }
}
