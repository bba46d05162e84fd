//! Child processes for the real-infrastructure harness: bounded runs, the process tree under a
//! PID (read from `/proc`), and signals sent by PID.
//!
//! Nothing here kills by name: every signal goes to a PID this harness started or found below
//! one it started.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Why a child process could not be run to completion.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("`{command}` did not finish within {timeout_ms} ms and was killed")]
    Timeout { command: String, timeout_ms: u128 },
    #[error("waiting for `{command}` failed: {source}")]
    Wait {
        command: String,
        source: std::io::Error,
    },
}

/// What a finished child printed, and how it ended.
#[derive(Debug, Clone)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Finished {
    /// The exit code, or `None` when a signal ended the process.
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

/// `cmd` as one shell-like line, for messages.
pub fn describe(cmd: &Command) -> String {
    let mut line = cmd.get_program().to_string_lossy().into_owned();
    for arg in cmd.get_args() {
        line.push(' ');
        line.push_str(&arg.to_string_lossy());
    }
    line
}

/// Runs `cmd` (stdin from /dev/null) and collects its output; kills it after `timeout`.
pub fn run_bounded(cmd: &mut Command, timeout: Duration) -> Result<Finished, ProcessError> {
    let command = describe(cmd);
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| ProcessError::Spawn {
            command: command.clone(),
            source,
        })?;
    let stdout = child.stdout.take().map(drain);
    let stderr = child.stderr.take().map(drain);
    let mut pause = Duration::from_micros(500);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ProcessError::Timeout {
                    command,
                    timeout_ms: timeout.as_millis(),
                });
            }
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(10));
            }
            Err(source) => return Err(ProcessError::Wait { command, source }),
        }
    };
    let join = |h: Option<std::thread::JoinHandle<String>>| {
        h.map(|h| h.join().unwrap_or_default()).unwrap_or_default()
    };
    Ok(Finished {
        status,
        stdout: join(stdout),
        stderr: join(stderr),
        elapsed: started.elapsed(),
    })
}

/// Reads a pipe to its end on a thread, so that a chatty child never blocks on a full pipe.
fn drain<R: Read + Send + 'static>(mut pipe: R) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// One line of `/proc/<pid>/stat`, the fields the harness needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: u32,
    pub comm: String,
    pub state: char,
    pub ppid: u32,
}

/// Parses `/proc/<pid>/stat`; `comm` may hold spaces and parentheses, so it ends at the last `)`.
pub fn parse_stat(line: &str) -> Option<ProcStat> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let pid = line.get(..open)?.trim().parse().ok()?;
    let comm = line.get(open + 1..close)?.to_string();
    let mut rest = line.get(close + 1..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some(ProcStat {
        pid,
        comm,
        state,
        ppid,
    })
}

/// The stat of one process, `None` when it is gone.
pub fn stat(pid: u32) -> Option<ProcStat> {
    let line = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&line)
}

/// True while `pid` exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|s| s.state != 'Z')
}

/// Every live process below `root` (children, grandchildren, ...), parents before children.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(s) = stat(pid).filter(|s| s.state != 'Z') {
                children.entry(s.ppid).or_default().push(pid);
            }
        }
    }
    let mut found = Vec::new();
    let mut seen = BTreeSet::new();
    let mut queue = vec![root];
    while let Some(parent) = queue.pop() {
        for &child in children.get(&parent).map(Vec::as_slice).unwrap_or(&[]) {
            if seen.insert(child) {
                found.push(child);
                queue.push(child);
            }
        }
    }
    found
}

/// Sends `signal` (a name such as `TERM` or `KILL`) to each PID; gone PIDs are not an error.
pub fn signal(pids: &[u32], signal: &str) {
    if pids.is_empty() {
        return;
    }
    let mut cmd = Command::new("kill");
    cmd.arg("-s")
        .arg(signal)
        .args(pids.iter().map(u32::to_string));
    let _ = run_bounded(&mut cmd, Duration::from_secs(5));
}

/// Waits until none of `pids` is alive; false when `timeout` passed first.
pub fn wait_gone(pids: &[u32], timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if !pids.iter().any(|&p| alive(p)) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until every thread of `pid` but a zombie leader is gone. A multi-threaded process
/// killed by a signal shows its leader as a zombie while its other threads still exit, holding
/// the shared file table (and its locks, e.g. a daemon's PID file lock) until the last one is
/// gone: `alive` is false before then.
pub fn wait_threads_gone(pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        let threads = std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count());
        if threads <= 1 {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Reads a PID file (a decimal number, optionally followed by a newline).
pub fn read_pid_file(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_spaces_and_parentheses_in_comm() {
        let s = parse_stat("4242 (qemu (x) y) S 17 4242 4242 0 -1").expect("parses");
        assert_eq!(s.pid, 4242);
        assert_eq!(s.comm, "qemu (x) y");
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 17);
    }

    #[test]
    fn malformed_stat_is_none() {
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("12 (x) S notanumber"), None);
    }

    #[test]
    fn bounded_run_kills_on_timeout_and_collects_output() {
        let err = run_bounded(Command::new("sleep").arg("5"), Duration::from_millis(100))
            .expect_err("sleep 5 must time out");
        assert!(matches!(err, ProcessError::Timeout { .. }), "{err}");
        let out = run_bounded(
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
            Duration::from_secs(5),
        )
        .expect("sh runs");
        assert_eq!(out.code(), Some(3));
        assert_eq!(out.stdout, "out\n");
        assert_eq!(out.stderr, "err\n");
    }

    #[test]
    fn descendants_finds_grandchildren() {
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30; wait"])
            .spawn()
            .expect("sh");
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut below = Vec::new();
        while Instant::now() < deadline {
            below = descendants(child.id());
            if below.len() >= 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = child.kill();
        signal(&below, "KILL");
        let _ = child.wait();
        assert_eq!(below.len(), 2, "two sleeps below the shell: {below:?}");
        assert!(wait_gone(&below, Duration::from_secs(5)));
    }
}
