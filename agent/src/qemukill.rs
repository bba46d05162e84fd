//! Ends a domain's QEMU process without libvirtd: what a stop does when the daemon is down or hung
//! and the guest still runs, instead of failing and getting the node fenced.
//!
//! Only a process proven to be this domain's of this daemon is signalled. The proof: the daemon's
//! own status file for the domain (`<run dir>/qemu/<name>.xml`, written by libvirtd while the
//! domain runs) names the process id and the domain's UUID; that process's command line is QEMU's
//! with `-name guest=<name>` and `-uuid <uuid>`; and the daemon's PID file, when present, names
//! the same process. The process is then opened as a pidfd, checked again through it, and every
//! signal goes through the pidfd, so a process id reused meanwhile is never signalled.
//!
//! SIGTERM first (QEMU then quits at once, as libvirt's own destroy begins), SIGKILL at half the
//! time, then the process must be gone before the timeout. When libvirtd answers again it finds
//! the monitor closed and shows the domain shut off (a transient domain: not defined).

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use quick_xml::Reader;
use quick_xml::events::Event;
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

use crate::procscan;

/// The default `qemu:///system` daemon's run directory for its QEMU domains.
pub const SYSTEM_RUN_DIR: &str = "/run/libvirt/qemu";

/// Where the daemon behind a local QEMU `uri` keeps its domains' status files: `/run/libvirt/qemu`
/// for `qemu:///system`, or the `qemu` directory beside the socket a `socket=` parameter names
/// (the daemon's run directory holds both). `None` for every other URI (a session daemon, a remote
/// host, a transport other than `unix`): no process of theirs is ever signalled.
pub fn run_dir(uri: Option<&str>) -> Option<PathBuf> {
    let Some(uri) = uri else {
        return Some(PathBuf::from(SYSTEM_RUN_DIR));
    };
    let (scheme, rest) = uri.split_once("://")?;
    if !matches!(scheme, "qemu" | "qemu+unix") || uri.contains(['#', '%']) {
        return None;
    }
    let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (host, path) = location.split_at(location.find('/')?);
    if !(host.is_empty() || host == "localhost") || path != "/system" {
        return None;
    }
    let socket = query.split('&').find_map(|p| p.strip_prefix("socket="));
    match socket {
        None => Some(PathBuf::from(SYSTEM_RUN_DIR)),
        Some(s) if s.starts_with('/') => Some(Path::new(s).parent()?.join("qemu")),
        Some(_) => None,
    }
}

/// What the daemon's status file says of a running domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub pid: u32,
    pub uuid: String,
}

/// Reads `domstatus`'s `pid` and `domstatus/domain/uuid` from a libvirt status file.
pub fn parse_status(xml: &str) -> Option<Status> {
    let mut reader = Reader::from_str(xml);
    let mut path: Vec<Vec<u8>> = Vec::new();
    let mut pid = None;
    loop {
        match reader.read_event().ok()? {
            Event::Start(e) => {
                if path.is_empty() && e.name().as_ref() == b"domstatus" {
                    pid = e
                        .attributes()
                        .flatten()
                        .find(|a| a.key.as_ref() == b"pid")
                        .and_then(|a| std::str::from_utf8(&a.value).ok()?.parse::<u32>().ok());
                }
                path.push(e.name().as_ref().to_vec());
            }
            Event::End(_) => {
                path.pop();
            }
            Event::Text(t) if path == [&b"domstatus"[..], b"domain", b"uuid"] => {
                let uuid = t.decode().ok()?.trim().to_owned();
                return Some(Status { pid: pid?, uuid });
            }
            Event::Eof => return None,
            _ => {}
        }
    }
}

/// The value after `-uuid` on a command line.
fn cmdline_uuid<'a>(args: &[&'a [u8]]) -> Option<&'a [u8]> {
    let pos = args.iter().position(|a| *a == b"-uuid")?;
    args.get(pos + 1).copied()
}

/// Whether `/proc/<pid>/cmdline` (under `proc_root`) is QEMU's for `name` with `uuid`.
pub fn cmdline_matches(proc_root: &Path, pid: u32, name: &str, uuid: &str) -> bool {
    let Ok(cmdline) = std::fs::read(proc_root.join(pid.to_string()).join("cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .collect();
    procscan::qemu_guest_name(&args).as_deref() == Some(name)
        && cmdline_uuid(&args).is_some_and(|u| u.eq_ignore_ascii_case(uuid.as_bytes()))
}

/// The process the daemon in `run_dir` runs `name` as, proven as the module doc says.
pub fn proven_pid(run_dir: &Path, proc_root: &Path, name: &str) -> Result<Status, String> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return Err(format!("domain name {name:?} cannot name a status file"));
    }
    let file = run_dir.join(format!("{name}.xml"));
    let xml = std::fs::read_to_string(&file).map_err(|e| {
        format!(
            "the daemon's status file {} is unreadable: {e}",
            file.display()
        )
    })?;
    let status = parse_status(&xml)
        .ok_or_else(|| format!("{} names no process id and UUID", file.display()))?;
    if !cmdline_matches(proc_root, status.pid, name, &status.uuid) {
        return Err(format!(
            "process {} named by {} is not QEMU with -name guest={name} -uuid {}",
            status.pid,
            file.display(),
            status.uuid
        ));
    }
    let pid_file = run_dir.join(format!("{name}.pid"));
    if let Ok(text) = std::fs::read_to_string(&pid_file) {
        if text.trim().parse::<u32>().ok() != Some(status.pid) {
            return Err(format!(
                "{} says {:?}, the status file process {}",
                pid_file.display(),
                text.trim(),
                status.pid
            ));
        }
    }
    Ok(status)
}

/// Whether the process behind `fd` has exited, waiting at most `wait`.
fn exited_within(fd: &OwnedFd, wait: Duration) -> bool {
    let timeout = Timespec {
        tv_sec: wait.as_secs() as i64,
        tv_nsec: i64::from(wait.subsec_nanos()),
    };
    let mut fds = [PollFd::new(fd, PollFlags::IN)];
    matches!(poll(&mut fds, Some(&timeout)), Ok(n) if n > 0)
}

/// Ends `name`'s QEMU process of the daemon in `run_dir` within `timeout_ms`; `Ok` says what was
/// done once the process is gone, `Err` why nothing was signalled or why it is not gone.
pub fn kill(run_dir: &Path, name: &str, timeout_ms: u64) -> Result<String, String> {
    let started = Instant::now();
    let proc_root = Path::new("/proc");
    let status = proven_pid(run_dir, proc_root, name)?;
    let pid = i32::try_from(status.pid)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or_else(|| format!("process id {} is not valid", status.pid))?;
    let fd = match pidfd_open(pid, PidfdFlags::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::SRCH) => {
            return Ok(format!("QEMU process {} had already exited", status.pid));
        }
        Err(e) => return Err(format!("cannot open process {}: {e}", status.pid)),
    };
    // The pidfd holds the process that had the id when it was opened. Its command line, read
    // while it has not exited, is therefore that process's: the proof holds for the handle.
    let still_ours = cmdline_matches(proc_root, status.pid, name, &status.uuid);
    if exited_within(&fd, Duration::ZERO) {
        return Ok(format!("QEMU process {} had already exited", status.pid));
    }
    if !still_ours {
        return Err(format!(
            "process {} no longer has domain {name}'s command line",
            status.pid
        ));
    }
    let total = Duration::from_millis(timeout_ms);
    let mut done = Vec::new();
    for (signal, label, share) in [(Signal::TERM, "SIGTERM", 2), (Signal::KILL, "SIGKILL", 1)] {
        if let Err(e) = pidfd_send_signal(&fd, signal) {
            return Err(format!("{label} to QEMU process {}: {e}", status.pid));
        }
        done.push(label);
        let wait = total.saturating_sub(started.elapsed()) / share;
        if exited_within(&fd, wait) {
            return Ok(format!(
                "QEMU process {} (uuid {}) ended after {} in {} ms",
                status.pid,
                status.uuid,
                done.join(" then "),
                started.elapsed().as_millis()
            ));
        }
    }
    Err(format!(
        "QEMU process {} survived {} for {} ms",
        status.pid,
        done.join(" and "),
        started.elapsed().as_millis()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = "<!--\nWARNING: generated\n-->\n\
        <domstatus state='running' reason='booted' pid='9233'>\n\
          <monitor path='/var/lib/libvirt/qemu/domain-1-t/monitor.sock' type='unix'/>\n\
          <domain type='qemu' id='1'>\n    <name>t</name>\n\
            <uuid>03175998-73b7-45eb-a678-de1e7a61c4b9</uuid>\n  </domain>\n</domstatus>\n";

    #[test]
    fn run_dirs_only_for_local_system_daemons() {
        let sys = Some(PathBuf::from(SYSTEM_RUN_DIR));
        assert_eq!(run_dir(None), sys);
        assert_eq!(run_dir(Some("qemu:///system")), sys);
        assert_eq!(run_dir(Some("qemu+unix://localhost/system")), sys);
        assert_eq!(
            run_dir(Some("qemu+unix:///system?socket=/tmp/d/run/libvirt-sock")),
            Some(PathBuf::from("/tmp/d/run/qemu"))
        );
        for refused in [
            "qemu:///session",
            "qemu+ssh://host/system",
            "qemu+tcp://10.0.0.1/system",
            "test:///default",
            "qemu+unix:///system?socket=relative/sock",
            "qemu+ext:///system?command=/x",
            "qemu:///system#x",
            "qemu",
        ] {
            assert_eq!(run_dir(Some(refused)), None, "{refused}");
        }
    }

    #[test]
    fn status_files_give_pid_and_uuid() {
        assert_eq!(
            parse_status(STATUS),
            Some(Status {
                pid: 9233,
                uuid: "03175998-73b7-45eb-a678-de1e7a61c4b9".into()
            })
        );
        assert_eq!(parse_status(&STATUS.replace(" pid='9233'", "")), None);
        assert_eq!(parse_status("<domain><uuid>x</uuid></domain>"), None);
        assert_eq!(parse_status("<domstatus pid='1'><uuid>x</uuid>"), None);
        assert_eq!(parse_status("not xml <"), None);
    }

    /// A fake run dir and /proc with one process `pid` of the given command line.
    fn layout(pid: u32, cmd: &str, pid_file: Option<&str>) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let run = root.path().join("run");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join("t.xml"), STATUS).unwrap();
        if let Some(p) = pid_file {
            std::fs::write(run.join("t.pid"), p).unwrap();
        }
        let proc_dir = root.path().join("proc").join(pid.to_string());
        std::fs::create_dir_all(&proc_dir).unwrap();
        std::fs::write(proc_dir.join("cmdline"), cmd.replace(' ', "\0") + "\0").unwrap();
        root
    }

    const QEMU: &str = "/usr/bin/qemu-system-x86_64 -name guest=t,debug-threads=on -S \
                        -uuid 03175998-73b7-45eb-a678-de1e7a61c4b9 -display none";

    #[test]
    fn a_process_counts_only_with_every_proof() {
        let prove = |root: &tempfile::TempDir, name: &str| {
            proven_pid(&root.path().join("run"), &root.path().join("proc"), name)
        };
        let ok = layout(9233, QEMU, Some("9233"));
        assert_eq!(prove(&ok, "t").map(|s| s.pid), Ok(9233));
        assert!(prove(&ok, "t2").is_err(), "no status file for another name");
        assert!(prove(&ok, "../t").is_err());
        let no_pid_file = layout(9233, QEMU, None);
        assert!(prove(&no_pid_file, "t").is_ok());
        let other_pid_file = layout(9233, QEMU, Some("9234"));
        assert!(prove(&other_pid_file, "t").is_err());
        let reused = layout(9233, "/usr/bin/sleep 100", Some("9233"));
        assert!(prove(&reused, "t").is_err());
        let other_uuid = layout(9233, &QEMU.replace("de1e7a61c4b9", "de1e7a61c4b0"), None);
        assert!(prove(&other_uuid, "t").is_err());
        let other_name = layout(9233, &QEMU.replace("guest=t,", "guest=t1,"), None);
        assert!(prove(&other_name, "t").is_err());
        let gone = layout(1, QEMU, None);
        assert!(prove(&gone, "t").is_err(), "process 9233 does not exist");
    }

    #[test]
    fn kill_refuses_without_a_status_file() {
        let dir = tempfile::tempdir().unwrap();
        let e = kill(dir.path(), "nothing-here", 100).unwrap_err();
        assert!(e.contains("status file"), "{e}");
    }

    /// A stand-in QEMU: a copy of `sh` named `qemu-standin` running `script` (which creates the
    /// file `$READY` once set up), with QEMU's `-name` and `-uuid` arguments, and the daemon's
    /// status and PID files naming it.
    fn standin(script: &str) -> (tempfile::TempDir, std::process::Child) {
        let dir = tempfile::tempdir().unwrap();
        let sh = dir.path().join("qemu-standin");
        std::fs::copy("/bin/sh", &sh).unwrap();
        let child = std::process::Command::new(&sh)
            .args(["-c", script, "-name", "guest=t,debug-threads=on"])
            .args(["-uuid", "03175998-73b7-45eb-a678-de1e7a61c4b9"])
            .env("READY", dir.path().join("ready"))
            .spawn()
            .unwrap();
        let status = STATUS.replace("9233", &child.id().to_string());
        std::fs::write(dir.path().join("t.xml"), status).unwrap();
        std::fs::write(dir.path().join("t.pid"), child.id().to_string()).unwrap();
        (dir, child)
    }

    /// Waits until the stand-in is set up and its command line reads as QEMU's.
    fn wait_exec(dir: &Path, child: &std::process::Child) {
        for _ in 0..500 {
            if dir.join("ready").exists() && proven_pid(dir, Path::new("/proc"), "t").is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("stand-in {} never looked like QEMU", child.id());
    }

    #[test]
    fn kill_ends_a_proven_process_with_sigterm() {
        let (dir, mut child) = standin(": > \"$READY\"; sleep 30; :");
        wait_exec(dir.path(), &child);
        let done = kill(dir.path(), "t", 5_000).unwrap();
        assert!(done.contains("after SIGTERM in"), "{done}");
        assert!(!done.contains("SIGKILL"), "{done}");
        assert!(child.wait().unwrap().code().is_none(), "ended by a signal");
    }

    #[test]
    fn kill_escalates_to_sigkill() {
        let (dir, mut child) =
            standin("trap '' TERM; : > \"$READY\"; while :; do sleep 0.05; done");
        wait_exec(dir.path(), &child);
        let done = kill(dir.path(), "t", 600).unwrap();
        assert!(done.contains("SIGTERM then SIGKILL"), "{done}");
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9));
    }

    #[test]
    fn kill_never_signals_an_unproven_process() {
        let (dir, mut child) = standin(": > \"$READY\"; sleep 30; :");
        wait_exec(dir.path(), &child);
        let other = STATUS
            .replace("9233", &child.id().to_string())
            .replace("c4b9", "c4b0");
        std::fs::write(dir.path().join("t.xml"), other).unwrap();
        assert!(kill(dir.path(), "t", 500).is_err());
        assert_eq!(child.try_wait().unwrap(), None, "still running");
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
