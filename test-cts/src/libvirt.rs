//! A private libvirtd with the QEMU driver (TCG) per test: start, readiness, `virsh`, teardown.
//!
//! Each [`LibvirtDaemon`] is a private mount namespace whose first process is `tini -s` (a child
//! subreaper: QEMU, double-forked by libvirtd, is re-parented to it and reaped at once). Below it
//! a guard shell bind-mounts per-instance directories over `/etc/libvirt`, `/run/libvirt`,
//! `/var/lib/libvirt`, `/var/cache/libvirt` and `/var/log/libvirt`, then runs `libvirtd`, and
//! again on request, so tests can kill and restart libvirtd while its guests keep running.
//! Clients reach it through `qemu+unix:///system?socket=<work>/run/libvirt-sock`, a pathname
//! socket under `/tmp` that every namespace sees.
//!
//! Teardown happens twice over, both by PID:
//! - `Drop` kills libvirtd, then every other process below the subreaper (the QEMU guests), lets
//!   the guard exit and removes the work directory; it runs on panics too.
//! - The guard reads a pipe whose only writer is the test process. When the test process ends
//!   without dropping the daemon (a `static` shared by the tests of one binary, an abort, a
//!   SIGKILL), the pipe reaches end-of-file and the guard kills libvirtd and the guests by their
//!   PID files and removes the work directory.
//!
//! Several daemons in one process get distinct work directories, host UUIDs, 127/8 addresses and
//! migration port ranges, derived from the process ID and a per-process counter.

use std::io::Write;
use std::net::Ipv4Addr;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::process::{self, Finished, ProcessError};

/// The fixed paths the QEMU driver uses, each replaced by a per-instance directory.
const MOUNTS: [(&str, &str); 5] = [
    ("etc", "/etc/libvirt"),
    ("run", "/run/libvirt"),
    ("lib", "/var/lib/libvirt"),
    ("cache", "/var/cache/libvirt"),
    ("log", "/var/log/libvirt"),
];

/// Migration ports live above the kernel's ephemeral range (32768-60999 by default), so outgoing
/// connections never take them; each daemon gets [`PORTS_PER_DAEMON`] of them.
const PORT_BASE: u16 = 61000;
const PORTS_PER_DAEMON: u16 = 10;
const PORT_SLOTS: u32 = 450;

/// How long a `virsh` call may take before the harness calls the daemon hung.
pub const VIRSH_TIMEOUT: Duration = Duration::from_secs(60);

/// The guard: the process below `tini` in the daemon's mount namespace. It mounts the instance's
/// directories and starts libvirtd, then reads commands on stdin: `start` runs libvirtd again
/// (after a test killed it), `stop` exits (the harness has already killed everything by PID).
/// End of input without `stop` means the harness died: the guard cleans up itself.
/// Arguments: $1 the work directory, $2 `--listen` or empty.
const GUARD_SCRIPT: &str = r#"set -eu
work=$1
listen=$2
mount --bind "$work/etc" /etc/libvirt
mount --bind "$work/run" /run/libvirt
mount --bind "$work/lib" /var/lib/libvirt
mount --bind "$work/cache" /var/cache/libvirt
mount --bind "$work/log" /var/log/libvirt
launch() {
    libvirtd $listen -f /etc/libvirt/libvirtd.conf -p /run/libvirt/libvirtd.pid </dev/null &
    echo "$!" >"$work/libvirtd.pid"
}
launch
while read -r command; do
    case $command in
        start) launch ;;
        stop) exit 0 ;;
    esac
done
set +e
kill -KILL "$(cat "$work/libvirtd.pid")" 2>/dev/null
for guest in /run/libvirt/qemu/*.pid; do
    [ -f "$guest" ] && kill -KILL "$(cat "$guest")" 2>/dev/null
done
for m in /var/log/libvirt /var/cache/libvirt /var/lib/libvirt /run/libvirt /etc/libvirt; do
    umount "$m" 2>/dev/null
done
rm -rf "$work"
"#;

/// Why a daemon could not be started or a `virsh` call failed.
#[derive(Debug, thiserror::Error)]
pub enum LibvirtError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error(transparent)]
    Host(#[from] crate::host::HostError),
    #[error("libvirtd ({label}) exited during start-up: {output}")]
    DaemonExited { label: String, output: String },
    #[error("libvirtd ({label}) not ready after {waited_ms} ms: {detail}")]
    NotReady {
        label: String,
        waited_ms: u128,
        detail: String,
    },
    #[error("`{command}` failed with {code:?}: {stderr}")]
    Virsh {
        command: String,
        code: Option<i32>,
        stderr: String,
    },
    #[error("unknown domain state `{0}` from virsh domstate")]
    UnknownState(String),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> LibvirtError + '_ {
    move |source| LibvirtError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A domain state as `virsh domstate` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DomState {
    NoState,
    Running,
    /// virsh prints "idle": the vCPUs are blocked, the guest still runs.
    Blocked,
    Paused,
    InShutdown,
    ShutOff,
    Crashed,
    PmSuspended,
}

impl DomState {
    /// Parses virsh's wording ("running", "shut off", ...).
    pub fn from_virsh(text: &str) -> Option<Self> {
        Some(match text.trim() {
            "no state" => Self::NoState,
            "running" => Self::Running,
            "idle" | "blocked" => Self::Blocked,
            "paused" => Self::Paused,
            "in shutdown" => Self::InShutdown,
            "shut off" => Self::ShutOff,
            "crashed" => Self::Crashed,
            "pmsuspended" => Self::PmSuspended,
            _ => return None,
        })
    }

    /// True when the guest executes on this host: running, blocked (idle vCPUs) or shutting down.
    /// A paused domain (an incoming migration, or a source after switch-over) does not execute.
    pub fn executes(self) -> bool {
        matches!(self, Self::Running | Self::Blocked | Self::InShutdown)
    }
}

/// What one daemon instance is: identity, address, ports, options.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// A short name for directories and messages ("a", "b", "ocft", ...).
    pub label: String,
    /// libvirtd's `host_uuid`; two daemons need distinct ones to migrate between them.
    pub host_uuid: String,
    /// The node's address: the QEMU migration stream listens here (never 127.0.0.1).
    pub address: Ipv4Addr,
    /// libvirt's `migration_port_min..=migration_port_max`.
    pub migration_ports: RangeInclusive<u16>,
    /// Also listen on TCP 16509 at `address` (no TLS, no auth), for `qemu+tcp://` URIs.
    pub tcp_listener: bool,
    /// Seed the QEMU capabilities cache from [`caps_store_dir`], saving the 1.5-3 s probe.
    pub prewarm_caps: bool,
    /// Upper bound for the socket to appear plus the first call (the capability probe).
    pub ready_timeout: Duration,
}

static NEXT_INSTANCE: AtomicU32 = AtomicU32::new(0);

impl DaemonConfig {
    /// A configuration unique in this process (and, through the PID, across concurrent ones).
    pub fn unique(label: &str) -> Self {
        let n = NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let slot = (pid % 45) * 10 + n;
        let low = PORT_BASE + (slot % PORT_SLOTS) as u16 * PORTS_PER_DAEMON;
        Self {
            label: label.to_string(),
            host_uuid: format!(
                "00000000-0000-4000-8000-{:06x}{:06x}",
                pid & 0xff_ffff,
                n & 0xff_ffff
            ),
            // 127.0.0.1 is refused as a migration address; 127.(100..250).x.y is ours.
            address: Ipv4Addr::new(
                127,
                100 + (n % 150) as u8,
                ((pid / 254) % 256) as u8,
                1 + (pid % 254) as u8,
            ),
            migration_ports: low..=low + PORTS_PER_DAEMON - 1,
            tcp_listener: false,
            prewarm_caps: true,
            ready_timeout: Duration::from_secs(60),
        }
    }

    fn libvirtd_conf(&self) -> String {
        format!(
            "# Written by test-cts for one test daemon.\n\
             unix_sock_dir = \"/run/libvirt\"\n\
             unix_sock_rw_perms = \"0700\"\n\
             auth_unix_ro = \"none\"\n\
             auth_unix_rw = \"none\"\n\
             host_uuid = \"{uuid}\"\n\
             listen_tls = 0\n\
             listen_tcp = 1\n\
             listen_addr = \"{addr}\"\n\
             auth_tcp = \"none\"\n\
             log_outputs = \"3:file:/var/log/libvirt/libvirtd.log\"\n",
            uuid = self.host_uuid,
            addr = self.address,
        )
    }

    fn qemu_conf(&self) -> String {
        // No systemd, dbus, AppArmor, cgroups or virtlogd on these machines: turn each off.
        format!(
            "# Written by test-cts for one test daemon.\n\
             user = \"root\"\n\
             group = \"root\"\n\
             dynamic_ownership = 0\n\
             remember_owner = 0\n\
             security_driver = \"none\"\n\
             cgroup_controllers = [ ]\n\
             namespaces = [ ]\n\
             stdio_handler = \"file\"\n\
             migration_address = \"{addr}\"\n\
             migration_host = \"{addr}\"\n\
             migration_port_min = {min}\n\
             migration_port_max = {max}\n",
            addr = self.address,
            min = self.migration_ports.start(),
            max = self.migration_ports.end(),
        )
    }
}

/// How long start-up took.
#[derive(Debug, Clone, Copy)]
pub struct DaemonTimings {
    /// From spawning to the socket existing.
    pub socket: Duration,
    /// The first `virsh version` (the QEMU capability probe unless pre-warmed).
    pub first_call: Duration,
    /// Whether the capabilities cache was seeded before start.
    pub caps_prewarmed: bool,
}

/// A running private libvirtd; dropping it tears everything down.
#[derive(Debug)]
pub struct LibvirtDaemon {
    config: DaemonConfig,
    work: PathBuf,
    uri: String,
    /// `unshare` exec'd `tini`: the namespace's first process, the subreaper.
    reaper: Child,
    /// The guard's commands pipe; `None` once `stop` was sent.
    guard_stdin: Mutex<Option<ChildStdin>>,
    timings: Option<DaemonTimings>,
    keep_work: bool,
}

impl LibvirtDaemon {
    /// Starts a daemon with a unique configuration and waits until it answers.
    pub fn start(label: &str) -> Result<Self, LibvirtError> {
        Self::start_with(DaemonConfig::unique(label))
    }

    /// Starts a daemon with `config` and waits until it answers.
    pub fn start_with(config: DaemonConfig) -> Result<Self, LibvirtError> {
        crate::host::prepare()?;
        let work = make_work_dir(&config)?;
        let caps_prewarmed = config.prewarm_caps && prewarm_caps(&work).unwrap_or(false);
        let log = work.join("daemon.out");
        let out = std::fs::File::create(&log).map_err(io_err(&log))?;
        let err = out.try_clone().map_err(io_err(&log))?;
        let started = Instant::now();
        let mut cmd = Command::new("unshare");
        cmd.args([
            "-m",
            "--propagation",
            "private",
            "--",
            "tini",
            "-s",
            "--",
            "sh",
            "-c",
        ])
        .arg(GUARD_SCRIPT)
        .arg("sh")
        .arg(&work)
        .arg(if config.tcp_listener { "--listen" } else { "" })
        .stdin(Stdio::piped())
        .stdout(out)
        .stderr(err);
        let mut reaper = cmd.spawn().map_err(|source| ProcessError::Spawn {
            command: process::describe(&cmd),
            source,
        })?;
        let guard_stdin = Mutex::new(reaper.stdin.take());
        let uri = format!(
            "qemu+unix:///system?socket={}",
            work.join("run/libvirt-sock").display()
        );
        let mut daemon = Self {
            config,
            work,
            uri,
            reaper,
            guard_stdin,
            timings: None,
            keep_work: std::env::var_os("HIGHLANDER_KEEP_LIBVIRT").is_some(),
        };
        // From here on, an error drops `daemon`, which tears down what was started.
        let socket = daemon.wait_for_socket(started)?;
        let probe = Instant::now();
        let left = daemon
            .config
            .ready_timeout
            .saturating_sub(started.elapsed());
        let first = daemon.virsh_with_timeout(&["version"], left.max(Duration::from_secs(1)))?;
        if !first.status.success() {
            return Err(LibvirtError::NotReady {
                label: daemon.config.label.clone(),
                waited_ms: started.elapsed().as_millis(),
                detail: format!("virsh version: {}{}", first.stderr, daemon.log_tail()),
            });
        }
        daemon.timings = Some(DaemonTimings {
            socket,
            first_call: probe.elapsed(),
            caps_prewarmed,
        });
        if daemon.config.prewarm_caps {
            // Best effort: a failure only costs the next daemon the probe.
            let _ = store_caps(&daemon.work);
        }
        Ok(daemon)
    }

    fn wait_for_socket(&mut self, started: Instant) -> Result<Duration, LibvirtError> {
        let socket = self.work.join("run/libvirt-sock");
        loop {
            if socket.exists() {
                return Ok(started.elapsed());
            }
            if let Ok(Some(status)) = self.reaper.try_wait() {
                return Err(LibvirtError::DaemonExited {
                    label: self.config.label.clone(),
                    output: format!("{status}; {}", self.log_tail()),
                });
            }
            if started.elapsed() > self.config.ready_timeout {
                return Err(LibvirtError::NotReady {
                    label: self.config.label.clone(),
                    waited_ms: started.elapsed().as_millis(),
                    detail: format!("no socket at {}; {}", socket.display(), self.log_tail()),
                });
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// `qemu+unix:///system?socket=...`, for virsh, the agent's `hypervisor` and migration.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// `qemu+tcp://<address>/system`, served only when `tcp_listener` was set.
    pub fn tcp_uri(&self) -> String {
        format!("qemu+tcp://{}/system", self.config.address)
    }

    pub fn config(&self) -> &DaemonConfig {
        &self.config
    }

    pub fn label(&self) -> &str {
        &self.config.label
    }

    pub fn host_uuid(&self) -> &str {
        &self.config.host_uuid
    }

    pub fn address(&self) -> Ipv4Addr {
        self.config.address
    }

    /// The instance's directory (its `run/`, `log/`, ... are the daemon's `/run/libvirt`, ...).
    pub fn work_dir(&self) -> &Path {
        &self.work
    }

    /// Start-up timings, measured once.
    pub fn timings(&self) -> DaemonTimings {
        self.timings.unwrap_or(DaemonTimings {
            socket: Duration::ZERO,
            first_call: Duration::ZERO,
            caps_prewarmed: false,
        })
    }

    /// The PID of the namespace's first process (`tini`, the subreaper above everything else).
    pub fn reaper_pid(&self) -> u32 {
        self.reaper.id()
    }

    /// The live processes of this daemon below the subreaper: guard, libvirtd and guests.
    pub fn pids(&self) -> Vec<u32> {
        process::descendants(self.reaper.id())
    }

    /// The PID of the running libvirtd, `None` while it is down.
    pub fn libvirtd_pid(&self) -> Option<u32> {
        self.pids()
            .into_iter()
            .find(|&p| process::stat(p).is_some_and(|s| s.comm == "libvirtd"))
    }

    /// Kills libvirtd with SIGKILL, as a crash would; its guests keep running.
    pub fn kill_libvirtd(&self) -> Result<(), LibvirtError> {
        let Some(pid) = self.libvirtd_pid() else {
            return Ok(());
        };
        process::signal(&[pid], "KILL");
        // (its PID file lock is free only once its last thread is gone, not when the leader is
        // a zombie: a restart before then fails to acquire it)
        if process::wait_gone(&[pid], Duration::from_secs(10))
            && process::wait_threads_gone(pid, Duration::from_secs(10))
        {
            Ok(())
        } else {
            Err(LibvirtError::NotReady {
                label: self.config.label.clone(),
                waited_ms: 10_000,
                detail: format!("libvirtd {pid} survived SIGKILL"),
            })
        }
    }

    /// Stops libvirtd with SIGSTOP: a hung daemon. Connections are still accepted by the kernel,
    /// but nothing answers until [`Self::thaw_libvirtd`]. Returns the frozen PID.
    pub fn freeze_libvirtd(&self) -> Result<u32, LibvirtError> {
        let pid = self.libvirtd_pid().ok_or_else(|| LibvirtError::NotReady {
            label: self.config.label.clone(),
            waited_ms: 0,
            detail: "no libvirtd to freeze".into(),
        })?;
        process::signal(&[pid], "STOP");
        let deadline = Instant::now() + Duration::from_secs(5);
        while process::stat(pid).is_some_and(|s| s.state != 'T') && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(pid)
    }

    /// Lets a frozen libvirtd run again.
    pub fn thaw_libvirtd(&self) {
        if let Some(pid) = self.libvirtd_pid() {
            process::signal(&[pid], "CONT");
        }
    }

    /// Starts libvirtd again after [`Self::kill_libvirtd`] (it reattaches to running guests) and
    /// waits until it answers; returns how long that took.
    pub fn restart_libvirtd(&self) -> Result<Duration, LibvirtError> {
        let started = Instant::now();
        self.kill_libvirtd()?;
        {
            let mut stdin = self
                .guard_stdin
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let sent = stdin
                .as_mut()
                .map(|s| s.write_all(b"start\n").and_then(|()| s.flush()));
            if !matches!(sent, Some(Ok(()))) {
                return Err(LibvirtError::DaemonExited {
                    label: self.config.label.clone(),
                    output: format!("the guard no longer takes commands; {}", self.log_tail()),
                });
            }
        }
        let deadline = started + self.config.ready_timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.libvirtd_pid().is_some() {
                let out =
                    self.virsh_with_timeout(&["version"], left.max(Duration::from_secs(1)))?;
                if out.status.success() {
                    return Ok(started.elapsed());
                }
            }
            if left.is_zero() {
                return Err(LibvirtError::NotReady {
                    label: self.config.label.clone(),
                    waited_ms: started.elapsed().as_millis(),
                    detail: format!("libvirtd did not come back; {}", self.log_tail()),
                });
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The PID of a running guest's QEMU process, from libvirt's PID file.
    pub fn qemu_pid(&self, domain: &str) -> Option<u32> {
        process::read_pid_file(&self.work.join(format!("run/qemu/{domain}.pid")))
    }

    /// Runs `virsh -c <uri> <args>` and returns its output whatever the exit status.
    pub fn virsh(&self, args: &[&str]) -> Result<Finished, LibvirtError> {
        self.virsh_with_timeout(args, VIRSH_TIMEOUT)
    }

    /// As [`Self::virsh`], bounded by `timeout`.
    pub fn virsh_with_timeout(
        &self,
        args: &[&str],
        timeout: Duration,
    ) -> Result<Finished, LibvirtError> {
        let mut cmd = Command::new("virsh");
        cmd.arg("-q").arg("-c").arg(&self.uri).args(args);
        Ok(process::run_bounded(&mut cmd, timeout)?)
    }

    /// Runs virsh and fails unless it exits 0; returns stdout.
    pub fn virsh_ok(&self, args: &[&str]) -> Result<String, LibvirtError> {
        let out = self.virsh(args)?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(LibvirtError::Virsh {
                command: format!("virsh -c {} {}", self.uri, args.join(" ")),
                code: out.code(),
                stderr: out.stderr,
            })
        }
    }

    /// The state of `domain`, `None` when this daemon does not know it.
    pub fn domstate(&self, domain: &str) -> Result<Option<DomState>, LibvirtError> {
        let out = self.virsh(&["domstate", domain])?;
        if !out.status.success() {
            if out.stderr.contains("failed to get domain") || out.stderr.contains("not found") {
                return Ok(None);
            }
            return Err(LibvirtError::Virsh {
                command: format!("virsh domstate {domain}"),
                code: out.code(),
                stderr: out.stderr,
            });
        }
        let text = out.stdout.trim();
        DomState::from_virsh(text)
            .map(Some)
            .ok_or_else(|| LibvirtError::UnknownState(text.to_string()))
    }

    /// Polls until `domain` is in `state` (`None`: unknown to this daemon); false on timeout.
    pub fn wait_state(
        &self,
        domain: &str,
        state: Option<DomState>,
        timeout: Duration,
    ) -> Result<bool, LibvirtError> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.domstate(domain)? == state {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The last lines of the daemon's output and libvirtd.log, for error messages.
    pub fn log_tail(&self) -> String {
        let mut text = String::new();
        for name in ["daemon.out", "log/libvirtd.log"] {
            if let Ok(body) = std::fs::read_to_string(self.work.join(name)) {
                let lines: Vec<&str> = body.lines().collect();
                let from = lines.len().saturating_sub(15);
                text.push_str(&format!("\n--- {name}:\n{}", lines[from..].join("\n")));
            }
        }
        text
    }

    /// Kills libvirtd, then the guests and anything else below the subreaper by PID, tells the
    /// guard to exit (the subreaper follows), removes the work directory. `Drop` calls it.
    fn teardown(&mut self) {
        let reaper = self.reaper.id();
        // libvirtd first, so that it starts no new guest while the rest goes.
        let libvirtd: Vec<u32> = self
            .pids()
            .into_iter()
            .filter(|&p| process::stat(p).is_some_and(|s| s.comm == "libvirtd"))
            .collect();
        process::signal(&libvirtd, "KILL");
        for _ in 0..20 {
            // Everything but the guard: it exits by itself on "stop", and then so does tini.
            let rest: Vec<u32> = self
                .pids()
                .into_iter()
                .filter(|&p| process::stat(p).is_none_or(|s| !(s.ppid == reaper && s.comm == "sh")))
                .collect();
            if rest.is_empty() {
                break;
            }
            process::signal(&rest, "KILL");
            process::wait_gone(&rest, Duration::from_millis(500));
        }
        let stdin = self
            .guard_stdin
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(b"stop\n");
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.reaper.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if Instant::now() >= deadline => {
                    let leftover = self.pids();
                    process::signal(&leftover, "KILL");
                    let _ = self.reaper.kill();
                    let _ = self.reaper.wait();
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
        if self.keep_work {
            eprintln!(
                "test-cts: kept libvirtd work dir {} (HIGHLANDER_KEEP_LIBVIRT)",
                self.work.display()
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.work);
        }
    }
}

impl Drop for LibvirtDaemon {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// Starts two daemons at once, with distinct host UUIDs, addresses and port ranges, for live
/// migration from `a` to `b` and back.
pub fn pair() -> Result<(LibvirtDaemon, LibvirtDaemon), LibvirtError> {
    pair_with(DaemonConfig::unique("a"), DaemonConfig::unique("b"))
}

/// As [`pair`], with given configurations.
pub fn pair_with(
    a: DaemonConfig,
    b: DaemonConfig,
) -> Result<(LibvirtDaemon, LibvirtDaemon), LibvirtError> {
    let other = std::thread::spawn(move || LibvirtDaemon::start_with(b));
    let first = LibvirtDaemon::start_with(a);
    let second = other.join().unwrap_or_else(|_| {
        Err(LibvirtError::NotReady {
            label: "b".into(),
            waited_ms: 0,
            detail: "the start-up thread panicked".into(),
        })
    });
    Ok((first?, second?))
}

/// A domain name unique in this process: `<prefix>-<pid>-<n>`.
pub fn unique_name(prefix: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The XML of a tiny diskless guest: TCG, no network, no graphics, serial and console on a pty.
/// It boots SeaBIOS and idles, which is all a live migration needs.
pub fn tiny_guest_xml(name: &str, memory_mib: u32) -> String {
    format!(
        "<domain type='qemu'>\n\
         \x20 <name>{name}</name>\n\
         \x20 <memory unit='MiB'>{memory_mib}</memory>\n\
         \x20 <vcpu>1</vcpu>\n\
         \x20 <os><type arch='x86_64' machine='pc'>hvm</type></os>\n\
         \x20 <on_poweroff>destroy</on_poweroff>\n\
         \x20 <devices>\n\
         \x20   <emulator>/usr/bin/qemu-system-x86_64</emulator>\n\
         \x20   <serial type='pty'/>\n\
         \x20   <console type='pty'/>\n\
         \x20   <memballoon model='none'/>\n\
         \x20 </devices>\n\
         </domain>\n"
    )
}

/// Writes [`tiny_guest_xml`] to `<dir>/<name>.xml` and returns the path.
pub fn write_tiny_guest(dir: &Path, name: &str, memory_mib: u32) -> Result<PathBuf, LibvirtError> {
    let path = dir.join(format!("{name}.xml"));
    std::fs::write(&path, tiny_guest_xml(name, memory_mib)).map_err(io_err(&path))?;
    Ok(path)
}

/// The programs a real daemon needs.
const REQUIRED_PROGRAMS: [&str; 5] = ["libvirtd", "virsh", "qemu-system-x86_64", "tini", "unshare"];

/// What keeps this machine from running real daemons: not root, or programs missing from `PATH`.
/// `None` when everything is there.
pub fn missing_real_infra(extra_programs: &[&str]) -> Option<String> {
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|euid| euid == "0"))
        })
        .unwrap_or(false);
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .collect();
    let missing: Vec<&str> = REQUIRED_PROGRAMS
        .iter()
        .chain(extra_programs)
        .copied()
        .filter(|p| !dirs.iter().any(|d| d.join(p).is_file()))
        .collect();
    match (root, missing.is_empty()) {
        (true, true) => None,
        (false, true) => Some("not root (private libvirtds need mount namespaces)".into()),
        (root, false) => Some(format!(
            "{}missing {} (run tools/deps.sh)",
            if root { "" } else { "not root; " },
            missing.join(", ")
        )),
    }
}

/// For the first line of a real-infrastructure test: true when it can run. Otherwise says
/// "SKIPPED <test>: <why>" loudly and returns false, except under CI (`CI` set), where every
/// prerequisite is installed and a skip would hide a broken test: there it panics.
pub fn real_infra_or_skip(test: &str, extra_programs: &[&str]) -> bool {
    let Some(why) = missing_real_infra(extra_programs) else {
        return true;
    };
    let msg = format!("SKIPPED {test}: {why}");
    assert!(std::env::var_os("CI").is_none(), "{msg}; CI must not skip");
    eprintln!("{msg}");
    false
}

fn make_work_dir(config: &DaemonConfig) -> Result<PathBuf, LibvirtError> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let label: String = config
        .label
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(12)
        .collect();
    let work = std::env::temp_dir().join(format!("hl-lv-{}-{label}-{nanos:x}", std::process::id()));
    std::fs::create_dir(&work).map_err(io_err(&work))?;
    for (dir, _) in MOUNTS {
        let path = work.join(dir);
        std::fs::create_dir(&path).map_err(io_err(&path))?;
    }
    let files = [
        ("etc/libvirtd.conf", config.libvirtd_conf()),
        ("etc/qemu.conf", config.qemu_conf()),
        (
            "etc/libvirt.conf",
            "# empty: clients use explicit URIs\n".to_string(),
        ),
    ];
    for (name, body) in files {
        let path = work.join(name);
        std::fs::write(&path, body).map_err(io_err(&path))?;
    }
    Ok(work)
}

/// Where probed QEMU capabilities are kept between daemons and test runs:
/// `$HIGHLANDER_QEMU_CAPS_DIR`, else `<tmp>/highlander-qemu-caps`. libvirt validates each cached
/// file itself (QEMU binary and libvirtd timestamps, kernel, microcode) and re-probes when stale.
pub fn caps_store_dir() -> PathBuf {
    std::env::var_os("HIGHLANDER_QEMU_CAPS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("highlander-qemu-caps"))
}

const CAPS_SUBDIR: &str = "cache/qemu/capabilities";

/// Copies the stored capability files into a new instance; true when at least one was copied.
fn prewarm_caps(work: &Path) -> std::io::Result<bool> {
    let store = caps_store_dir();
    let target = work.join(CAPS_SUBDIR);
    let mut copied = false;
    for entry in std::fs::read_dir(&store)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "xml") {
            if let Some(name) = path.file_name() {
                std::fs::create_dir_all(&target)?;
                std::fs::copy(&path, target.join(name))?;
                copied = true;
            }
        }
    }
    Ok(copied)
}

/// Saves an instance's capability files to the store, each written atomically (temporary file,
/// then rename), so concurrent test processes never read a half-written file.
fn store_caps(work: &Path) -> std::io::Result<()> {
    let store = caps_store_dir();
    std::fs::create_dir_all(&store)?;
    for entry in std::fs::read_dir(work.join(CAPS_SUBDIR))? {
        let path = entry?.path();
        let Some(name) = path.file_name() else {
            continue;
        };
        if path.extension().is_none_or(|e| e != "xml") {
            continue;
        }
        let body = std::fs::read(&path)?;
        let stored = store.join(name);
        if std::fs::read(&stored).is_ok_and(|old| old == body) {
            continue;
        }
        let tmp = store.join(format!(
            ".{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        std::fs::write(&tmp, &body)?;
        std::fs::rename(&tmp, &stored)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_preparation_makes_every_mountpoint_a_daemon_binds_over() {
        for (_, target) in MOUNTS {
            assert!(
                crate::host::MOUNTPOINTS.contains(&target),
                "{target} is bound over but host::prepare does not make it"
            );
        }
    }

    #[test]
    fn states_parse_as_virsh_prints_them() {
        assert_eq!(DomState::from_virsh("running\n"), Some(DomState::Running));
        assert_eq!(DomState::from_virsh("shut off"), Some(DomState::ShutOff));
        assert_eq!(DomState::from_virsh("idle"), Some(DomState::Blocked));
        assert_eq!(
            DomState::from_virsh("in shutdown"),
            Some(DomState::InShutdown)
        );
        assert_eq!(DomState::from_virsh("sideways"), None);
        assert!(DomState::Running.executes());
        assert!(!DomState::Paused.executes());
        assert!(!DomState::ShutOff.executes());
    }

    #[test]
    fn unique_configs_differ_in_everything_that_must_not_collide() {
        let a = DaemonConfig::unique("a");
        let b = DaemonConfig::unique("b");
        assert_ne!(a.host_uuid, b.host_uuid);
        assert_ne!(a.address, b.address);
        assert_ne!(a.address, Ipv4Addr::new(127, 0, 0, 1));
        assert!(
            a.migration_ports.end() < b.migration_ports.start()
                || b.migration_ports.end() < a.migration_ports.start()
        );
        assert!(
            *a.migration_ports.start() > 60999,
            "above the ephemeral range"
        );
        assert!(
            a.libvirtd_conf()
                .contains(&format!("host_uuid = \"{}\"", a.host_uuid))
        );
        assert!(
            b.qemu_conf()
                .contains(&format!("migration_host = \"{}\"", b.address))
        );
    }

    #[test]
    fn tiny_guest_names_its_domain_and_memory() {
        let xml = tiny_guest_xml("vm-x", 48);
        assert!(xml.contains("<name>vm-x</name>"));
        assert!(xml.contains("<memory unit='MiB'>48</memory>"));
        assert!(xml.starts_with("<domain type='qemu'>"));
    }
}
