//! Runs a command under `strace` and reads back what it did to the network and the file system:
//! the evidence behind "nothing leaves the machine and nothing is written outside the data
//! directory". Used by `tests/privacy.rs` and by the desktop app's end-to-end test.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The system calls traced: every network call, and every call that creates, opens for
/// writing, renames or links a file. Reads are not traced (models are read from anywhere).
pub const TRACED: &str = "trace=%network,open,openat,openat2,creat,mkdir,mkdirat,rename,\
renameat,renameat2,link,linkat,symlink,symlinkat,truncate";

/// The strace program and options the analysis expects, without the log file and program.
pub fn strace_args() -> Vec<String> {
    [
        "strace",
        "-f",
        "-qq",
        "--seccomp-bpf",
        "-s",
        "4096",
        "-e",
        TRACED,
        "-e",
        "signal=none",
    ]
    .map(String::from)
    .to_vec()
}

/// `strace` with the options the analysis expects, writing its log to `log`; append the
/// program and its arguments.
pub fn command(log: &Path) -> Command {
    let args = strace_args();
    let mut c = Command::new(&args[0]);
    c.args(&args[1..]).arg("-o").arg(log);
    c
}

/// Fails with what to install when strace is missing or cannot trace here.
pub fn require() {
    let ok = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=none", "true"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        ok,
        "strace is needed to prove that Rudder opens no network connection \
         (Debian: apt-get install strace; scripts/setup.sh installs it)"
    );
}

/// What one traced run did that the privacy promise forbids, or records for the reader.
#[derive(Debug, Default)]
pub struct Findings {
    /// `socket()` calls of any family but AF_UNIX, and AF_UNIX connections to a name server
    /// cache: a network connection or a DNS lookup.
    pub network: Vec<String>,
    /// Name-resolution configuration read: the first step of a DNS lookup.
    pub dns: Vec<String>,
    /// Files created, opened for writing, renamed or linked outside the allowed folders.
    pub writes_outside: Vec<String>,
    /// Every path written (inside or outside), for the record.
    pub written: Vec<PathBuf>,
    /// How many traced calls the log held.
    pub calls: usize,
}

impl Findings {
    pub fn is_clean(&self) -> bool {
        self.network.is_empty() && self.dns.is_empty() && self.writes_outside.is_empty()
    }
}

/// Reads an strace log made by [`command`]. `cwd` resolves relative paths; writes are allowed
/// under `allowed` and to devices (`/dev/null`, `/dev/shm`, a terminal) and `/proc/self`.
pub fn analyse(log: &str, cwd: &Path, allowed: &[&Path]) -> Findings {
    analyse_with(log, cwd, allowed, false)
}

/// [`analyse`], but with sockets on the loopback interface allowed (`loopback_ok`): the
/// desktop test drives the window through WebKit's automation server on 127.0.0.1, so there
/// every address a socket binds, connects or sends to must be a loopback one instead.
pub fn analyse_with(log: &str, cwd: &Path, allowed: &[&Path], loopback_ok: bool) -> Findings {
    let mut f = Findings::default();
    for line in log.lines() {
        // `PID call(args) = result`; skip the pid.
        let call = line.split_once(' ').map(|(_, c)| c).unwrap_or(line).trim();
        if call.starts_with("+++") || call.starts_with("---") || call.is_empty() {
            continue;
        }
        f.calls += 1;
        let failed = call.contains(" = -1 ");
        if call.starts_with("socket(") {
            // AF_UNIX stays on the machine; AF_NETLINK talks to the kernel (glib's network
            // monitor reads the interface state through it), never to another host.
            let local = ["socket(AF_UNIX", "socket(AF_LOCAL", "socket(AF_NETLINK"]
                .iter()
                .any(|p| call.starts_with(p));
            let internet =
                call.starts_with("socket(AF_INET,") || call.starts_with("socket(AF_INET6,");
            if !local && (!internet || !loopback_ok) {
                f.network.push(line.to_string());
            }
            continue;
        }
        let addressed = ["connect(", "bind(", "sendto(", "sendmsg("]
            .iter()
            .any(|c| call.starts_with(c));
        if addressed {
            if call.contains("htons(53)") {
                f.network.push(line.to_string());
            } else if call.contains("AF_INET") {
                let loopback = call.contains("inet_addr(\"127.0.0.1\")")
                    || call.contains("inet_pton(AF_INET6, \"::1\"");
                if !loopback || !loopback_ok {
                    f.network.push(line.to_string());
                }
            }
            continue;
        }
        // The rest of %network (recvmsg, getpeername, …) moves data on sockets already judged.
        if !FILE_CALLS.iter().any(|c| call.starts_with(c)) {
            continue;
        }
        let Some(path) = first_path(call) else {
            continue;
        };
        let path = if path.is_absolute() {
            path
        } else {
            cwd.join(path)
        };
        if path.starts_with("/etc/resolv.conf") || path.starts_with("/etc/hosts") {
            f.dns.push(line.to_string());
            continue;
        }
        if failed || !is_write(call) {
            continue;
        }
        let device = ["/dev/", "/proc/self/", "/proc/thread-self/"]
            .iter()
            .any(|p| path.starts_with(p))
            || path.starts_with("/proc/") && path.to_string_lossy().contains("/task/");
        if !device && !allowed.iter().any(|a| path.starts_with(a)) {
            f.writes_outside.push(line.to_string());
        }
        f.written.push(path);
    }
    f
}

/// The traced calls that act on a path.
const FILE_CALLS: [&str; 14] = [
    "open(",
    "openat(",
    "openat2(",
    "creat(",
    "mkdir(",
    "mkdirat(",
    "rename(",
    "renameat(",
    "renameat2(",
    "link(",
    "linkat(",
    "symlink(",
    "symlinkat(",
    "truncate(",
];

/// Whether a traced file call changes the file system (open calls only with a write flag).
fn is_write(call: &str) -> bool {
    if call.starts_with("open") {
        ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC"]
            .iter()
            .any(|flag| call.contains(flag))
    } else {
        true
    }
}

/// The first quoted string of a call: the path it acts on (for `openat(AT_FDCWD, "…"`, the
/// path after the directory descriptor). A path relative to another descriptor than the
/// current directory is shown by `-y`-less strace as relative, and resolved against `cwd` —
/// close enough here: Rudder opens by absolute path.
fn first_path(call: &str) -> Option<PathBuf> {
    let start = call.find('"')? + 1;
    let rest = &call[start..];
    let end = rest.find('"')?;
    Some(PathBuf::from(unescape(&rest[..end])))
}

fn unescape(s: &str) -> String {
    s.replace("\\\\", "\\")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_analysis_flags_what_it_should() {
        let log = r#"10 socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0) = 3
10 socket(AF_INET, SOCK_DGRAM|SOCK_CLOEXEC|SOCK_NONBLOCK, IPPROTO_IP) = 4
10 socket(AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC, NETLINK_ROUTE) = 5
10 recvfrom(4, "\\1\\0 /home/u/x", 8, 0, NULL, NULL) = 8
11 openat(AT_FDCWD, "/etc/resolv.conf", O_RDONLY|O_CLOEXEC) = 5
11 openat(AT_FDCWD, "/data/history/history.sqlite", O_RDWR|O_CREAT|O_CLOEXEC, 0644) = 6
11 openat(AT_FDCWD, "/home/u/.cache/Microsoft/deviceid", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 7
11 openat(AT_FDCWD, "/home/u/model.gguf", O_RDONLY|O_CLOEXEC) = 8
11 openat(AT_FDCWD, "/tmp/x", O_RDWR|O_CREAT|O_EXCL, 0600) = -1 EACCES (Permission denied)
11 mkdir("notes", 0777) = 0
11 openat(AT_FDCWD, "/dev/null", O_WRONLY) = 9
12 +++ exited with 0 +++"#;
        let f = analyse(log, Path::new("/work"), &[Path::new("/data")]);
        assert_eq!(f.network.len(), 1, "{f:#?}");
        assert_eq!(f.dns.len(), 1, "{f:#?}");
        assert_eq!(f.writes_outside.len(), 2, "{f:#?}");
        assert!(f.writes_outside[0].contains("Microsoft"));
        assert!(f.writes_outside[1].contains("mkdir(\"notes\""));
        assert!(!f.is_clean());

        let driven = r#"20 socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC, IPPROTO_IP) = 5
20 connect(5, {sa_family=AF_INET, sin_port=htons(41000), sin_addr=inet_addr("127.0.0.1")}, 16) = 0
21 connect(6, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("93.184.215.14")}, 16) = -1 EINPROGRESS"#;
        let f = analyse_with(driven, Path::new("/"), &[], true);
        assert_eq!(f.network.len(), 1, "{f:#?}");
        assert!(f.network[0].contains("93.184.215.14"));
        assert_eq!(analyse(driven, Path::new("/"), &[]).network.len(), 3);
    }
}
