//! Processes of a test node, found by network namespace: listing, SIGKILL until none is left,
//! bounded command runs, and the clean-up of leftovers from an earlier run that was killed.
//!
//! Every test node lives in its own network namespace, so "the node's processes" is exactly
//! "the processes whose /proc/PID/ns/net is the node's", whoever their parent is (libvirtd's
//! double-forked QEMU, Pacemaker's sub-daemons, a CLI started with nsenter).

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::ClusterError;

/// Every name this harness creates (netns, work dirs) starts with this, then the owner's PID.
pub const NAME_PREFIX: &str = "hlc";

/// The `net:[inode]` identity of a network namespace, as /proc/PID/ns/net reads.
pub fn netns_of_pid(pid: u32) -> Option<String> {
    fs::read_link(format!("/proc/{pid}/ns/net"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

/// The identity of a named namespace under /run/netns.
pub fn netns_of_name(name: &str) -> Option<String> {
    fs::metadata(Path::new("/run/netns").join(name))
        .ok()
        .map(|m| format!("net:[{}]", m.ino()))
}

/// All live PIDs in the network namespace `netns`, except those in `spare`.
pub fn pids_in_netns(netns: &str, spare: &[u32]) -> BTreeSet<u32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return BTreeSet::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| !spare.contains(pid))
        .filter(|pid| netns_of_pid(*pid).as_deref() == Some(netns))
        .collect()
}

/// SIGKILLs every process in `netns` except `spare`, again and again until none is left (a
/// dying pacemakerd may still fork), for at most `timeout`. Returns the PIDs it killed.
pub fn kill_netns(
    netns: &str,
    spare: &[u32],
    timeout: Duration,
) -> Result<BTreeSet<u32>, ClusterError> {
    let started = Instant::now();
    let mut killed = BTreeSet::new();
    loop {
        let pids = pids_in_netns(netns, spare);
        if pids.is_empty() {
            return Ok(killed);
        }
        if started.elapsed() > timeout {
            return Err(ClusterError::Survivors {
                netns: netns.to_owned(),
                pids: pids.into_iter().collect(),
            });
        }
        signal(&pids, "KILL");
        killed.extend(pids);
        thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `sig` (a name such as TERM or KILL) to `pids` with kill(1); gone PIDs are fine.
pub fn signal(pids: &BTreeSet<u32>, sig: &str) {
    if pids.is_empty() {
        return;
    }
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .args(pids.iter().map(u32::to_string))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Whether a process exists (zombies included).
pub fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Waits (at most `timeout`) until none of `pids` runs any more (gone or a zombie).
pub fn wait_dead(pids: &BTreeSet<u32>, timeout: Duration) {
    let started = Instant::now();
    while pids.iter().any(|p| alive(*p) && !zombie(*p)) && started.elapsed() < timeout {
        thread::sleep(Duration::from_millis(10));
    }
}

/// Whether a process has exited but is not reaped yet (state Z in /proc/PID/stat).
pub fn zombie(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let (_, after_comm) = s.rsplit_once(')')?;
            after_comm.split_whitespace().next().map(|st| st == "Z")
        })
        .unwrap_or(false)
}

/// Runs `command`, killing it after `timeout`; the output of a timed-out command is an error.
pub fn run_bounded(mut command: Command, timeout: Duration) -> Result<Output, ClusterError> {
    let shown = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| ClusterError::Spawn {
            command: shown.clone(),
            source,
        })?;
    // Drain both pipes on threads so a chatty command cannot block on a full pipe.
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let out = thread::spawn(move || read_all(stdout.as_mut()));
    let err = thread::spawn(move || read_all(stderr.as_mut()));
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < timeout => thread::sleep(Duration::from_millis(5)),
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ClusterError::CommandTimeout {
                    command: shown,
                    timeout_ms: timeout.as_millis(),
                });
            }
        }
    };
    Ok(Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

fn read_all(pipe: Option<&mut impl std::io::Read>) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Some(pipe) = pipe {
        let _ = pipe.read_to_end(&mut buf);
    }
    buf
}

/// Removes libqb's shared-memory files (`/dev/shm/qb-<server>-<client>-...`) left by the
/// `killed` processes: a SIGKILLed corosync or Pacemaker daemon cannot remove its own. Only
/// files whose two PIDs are both dead and one of them in `killed` are touched.
pub fn remove_qb_leftovers(killed: &BTreeSet<u32>) -> usize {
    let Ok(dir) = fs::read_dir("/dev/shm") else {
        return 0;
    };
    let mut removed = 0;
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix("qb-") else {
            continue;
        };
        let fields: Vec<&str> = rest.split('-').collect();
        // qb-<server>-<client>-<fd>-<random> (IPC) or qb-<name>-<pid>-blackbox-* (flight recorder).
        let pids: Vec<u32> = if fields.first().is_some_and(|f| f.parse::<u32>().is_ok()) {
            fields
                .iter()
                .take(2)
                .filter_map(|f| f.parse().ok())
                .collect()
        } else {
            fields
                .iter()
                .filter_map(|f| f.parse().ok())
                .take(1)
                .collect()
        };
        if !pids.is_empty()
            && pids.iter().any(|p| killed.contains(p))
            && pids.iter().all(|p| !alive(*p) || zombie(*p))
        {
            let path = entry.path();
            let gone = if path.is_dir() {
                fs::remove_dir_all(&path)
            } else {
                fs::remove_file(&path)
            };
            removed += usize::from(gone.is_ok());
        }
    }
    removed
}

/// The owner PID encoded in a harness name (`hlc<pid>-...`), if it is one.
pub fn owner_of(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(NAME_PREFIX)?;
    rest.split('-').next()?.parse().ok()
}

/// Removes what earlier harness runs left behind when their process died before its
/// teardown: processes in their namespaces, the namespaces, their work dirs. Only names whose
/// owner PID is no longer alive are touched, so concurrent runs are left alone.
pub fn cleanup_stale() -> Vec<String> {
    let mut removed = Vec::new();
    let stale = |name: &str| owner_of(name).is_some_and(|pid| !alive(pid));
    let mut dirs: Vec<_> = fs::read_dir(std::env::temp_dir())
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_str().is_some_and(stale))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    // The daemons a run started, and those its fence agent killed, as the run recorded them:
    // their libqb files in /dev/shm are garbage once they are dead.
    let mut killed: BTreeSet<u32> = dirs.iter().flat_map(|d| recorded_pids(d)).collect();
    let mut names: Vec<String> = fs::read_dir("/run/netns")
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| stale(n))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    for name in names {
        if let Some(netns) = netns_of_name(&name) {
            if let Ok(pids) = kill_netns(&netns, &[], Duration::from_secs(5)) {
                if !pids.is_empty() {
                    removed.push(format!("{} processes in {name}", pids.len()));
                }
                killed.extend(pids);
            }
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &name])
            .stderr(Stdio::null())
            .status();
        removed.push(format!("netns {name}"));
    }
    wait_dead(&killed, Duration::from_secs(2));
    let n = remove_qb_leftovers(&killed);
    if n > 0 {
        removed.push(format!("{n} /dev/shm/qb-* files"));
    }
    for d in dirs {
        if fs::remove_dir_all(&d).is_ok() {
            removed.push(format!("dir {}", d.display()));
        }
    }
    removed
}

/// The file in a node's directory where the harness appends each daemon PID it starts.
pub const DAEMON_PIDS: &str = "daemon.pids";

/// PIDs a cluster work dir records: `node*/daemon.pids` and the fence log's "killed [...]".
pub fn recorded_pids(work: &Path) -> BTreeSet<u32> {
    let mut pids = BTreeSet::new();
    if let Ok(dir) = fs::read_dir(work) {
        for e in dir.flatten() {
            let text = fs::read_to_string(e.path().join(DAEMON_PIDS)).unwrap_or_default();
            pids.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    let log = fs::read_to_string(work.join("fence/fence.log")).unwrap_or_default();
    for line in log.lines() {
        if let Some((_, list)) = line.split_once("killed [") {
            pids.extend(
                list.trim_end_matches(']')
                    .split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_is_read_from_harness_names_only() {
        assert_eq!(owner_of("hlc123-4-n1"), Some(123));
        assert_eq!(owner_of("hlc77"), Some(77));
        assert_eq!(owner_of("pc1.123"), None);
        assert_eq!(owner_of("hlcx-1"), None);
    }

    #[test]
    fn a_bounded_run_reports_its_timeout() {
        let mut cmd = Command::new("sleep");
        cmd.arg("5");
        let err = run_bounded(cmd, Duration::from_millis(50)).unwrap_err();
        assert!(matches!(err, ClusterError::CommandTimeout { .. }), "{err}");
        let mut cmd = Command::new("echo");
        cmd.arg("hi");
        let out = run_bounded(cmd, Duration::from_secs(5)).unwrap();
        assert_eq!(out.stdout, b"hi\n");
    }
}
