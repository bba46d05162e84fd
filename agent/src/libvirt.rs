//! The real [`Hypervisor`] over libvirt (the `virt` crate). Every call runs on a worker thread and
//! the agent stops waiting at the call's timeout, so a hung libvirtd can never make the agent
//! overrun `CRM_meta_timeout` (an abandoned call ends with the process, see [`exit_process`]).

use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use virt::connect::Connect;
use virt::domain::{Domain, DomainPausedReason, DomainState as VirState};
use virt::error::{ErrorDomain, ErrorNumber};

use crate::hypervisor::{
    DomainInfo, DomainState, HvError, Hypervisor, JobInfo, JobKind, JobOperation, KillRefused,
    MigrateRequest, Op, PauseReason, ProcessCheck, ShutdownModes,
};

/// libvirt's `VIR_MIGRATE_LIVE` and `VIR_MIGRATE_PEER2PEER`.
const MIGRATE_LIVE: u32 = 1;
const MIGRATE_PEER2PEER: u32 = 2;

static QUIET: Once = Once::new();

/// A libvirt connection URI (or libvirt's default), opened lazily on a worker thread.
pub struct Libvirt {
    uri: Option<String>,
    conn: Arc<Mutex<Option<Arc<Connect>>>>,
}

impl std::fmt::Debug for Libvirt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Libvirt").field("uri", &self.uri).finish()
    }
}

impl Drop for Libvirt {
    fn drop(&mut self) {
        // virt's Connect panics in drop if close fails (a dead daemon); a connection is only ever
        // released on a worker thread, never on the caller's.
        // try_lock: a worker stuck opening the connection holds the slot; never wait for it.
        let conn = self.conn.try_lock().ok().and_then(|mut g| g.take());
        if let Some(conn) = conn {
            let _ = std::thread::Builder::new().spawn(move || drop(conn));
        }
    }
}

impl Libvirt {
    /// `uri` `None` lets libvirt pick its default (`LIBVIRT_DEFAULT_URI`, libvirt.conf, probing).
    pub fn new(uri: Option<&str>) -> Self {
        // libvirt prints every error on stderr by default; the agent reports them itself.
        QUIET.call_once(virt::error::clear_error_callback);
        Self {
            uri: uri.map(str::to_owned),
            conn: Arc::new(Mutex::new(None)),
        }
    }

    /// Runs `f` with the connection on a worker thread; gives up waiting after `timeout_ms`.
    fn call<T, F>(&self, op: Op, timeout_ms: u64, f: F) -> Result<T, HvError>
    where
        T: Send + 'static,
        F: FnOnce(&Connect) -> Result<T, HvError> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel();
        let slot = self.conn.clone();
        let uri = self.uri.clone();
        let shown = self.uri();
        let spawned = std::thread::Builder::new()
            .name(format!("libvirt {op}"))
            .spawn(move || {
                let conn = {
                    let mut guard = slot.lock().unwrap_or_else(|p| p.into_inner());
                    match guard.as_ref() {
                        Some(c) => c.clone(),
                        None => match Connect::open(uri.as_deref()) {
                            Ok(c) => {
                                let c = Arc::new(c);
                                *guard = Some(c.clone());
                                c
                            }
                            Err(e) => {
                                let _ = tx.send(Err(HvError::Unavailable {
                                    op,
                                    uri: shown,
                                    message: e.message().to_owned(),
                                }));
                                return;
                            }
                        },
                    }
                };
                let result = f(&conn);
                // A connection the daemon closed (libvirtd restarted) stays dead: forget it so
                // the next call opens a new one instead of failing until the deadline.
                let evicted = match &result {
                    Err(HvError::Unavailable { .. }) => {
                        let mut guard = slot.lock().unwrap_or_else(|p| p.into_inner());
                        match guard.as_ref() {
                            Some(c) if Arc::ptr_eq(c, &conn) => guard.take(),
                            _ => None,
                        }
                    }
                    _ => None,
                };
                let _ = tx.send(result);
                // Released here, on the worker thread, after the answer (see `Drop`).
                drop(evicted);
                drop(conn);
            });
        if let Err(e) = spawned {
            return Err(HvError::Failed {
                op,
                name: String::new(),
                message: format!("cannot start a worker thread: {e}"),
            });
        }
        match rx.recv_timeout(Duration::from_millis(timeout_ms)) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(HvError::Timeout {
                op,
                uri: self.uri(),
                timeout_ms,
            }),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(HvError::Failed {
                op,
                name: String::new(),
                message: "libvirt worker thread ended without an answer".into(),
            }),
        }
    }

    /// Whether this URI's domains run as QEMU processes on this host (a local `qemu` URI).
    fn has_qemu_processes(&self) -> bool {
        // libvirt's default on a host with QEMU is qemu:///system.
        let Some(u) = &self.uri else { return true };
        let (scheme, rest) = u.split_once("://").unwrap_or((u.as_str(), ""));
        let host = rest.split(['/', '?']).next().unwrap_or_default();
        scheme.split('+').next() == Some("qemu") && (host.is_empty() || host == "localhost")
    }
}

/// Classifies a libvirt error for the agent.
fn classify(op: Op, name: &str, uri: &str, e: virt::error::Error) -> HvError {
    use virt::enumutil::Enum;
    let message = e.message().to_owned();
    let code = match e.code() {
        Enum::Known(c) => Some(c),
        Enum::Unknown(_) => None,
    };
    let rpc = matches!(e.domain(), Enum::Known(ErrorDomain::Rpc));
    match code {
        Some(ErrorNumber::NoDomain) => HvError::NoDomain {
            op,
            name: name.to_owned(),
        },
        Some(ErrorNumber::OperationInvalid)
            if matches!(op, Op::Destroy | Op::Shutdown | Op::Info | Op::JobInfo)
                && message.contains("not running") =>
        {
            HvError::NotRunning {
                op,
                name: name.to_owned(),
            }
        }
        Some(ErrorNumber::NoConnect | ErrorNumber::InvalidConn) => HvError::Unavailable {
            op,
            uri: uri.to_owned(),
            message,
        },
        Some(ErrorNumber::SystemError) if rpc => HvError::Unavailable {
            op,
            uri: uri.to_owned(),
            message,
        },
        _ if rpc => HvError::Unavailable {
            op,
            uri: uri.to_owned(),
            message,
        },
        _ => HvError::Failed {
            op,
            name: name.to_owned(),
            message,
        },
    }
}

fn lookup(conn: &Connect, op: Op, name: &str, uri: &str) -> Result<Domain, HvError> {
    conn.lookup_domain_by_name(name)
        .map_err(|e| classify(op, name, uri, e))
}

fn job_from(stats: &virt::domain::JobStats) -> JobInfo {
    let kind = match stats.r#type {
        1 => JobKind::Bounded,
        2 => JobKind::Unbounded,
        3 => JobKind::Completed,
        4 => JobKind::Failed,
        5 => JobKind::Cancelled,
        _ => JobKind::None,
    };
    let operation = stats.operation.map(|o| match o as u32 {
        virt::sys::VIR_DOMAIN_JOB_OPERATION_MIGRATION_IN => JobOperation::MigrationIn,
        virt::sys::VIR_DOMAIN_JOB_OPERATION_MIGRATION_OUT => JobOperation::MigrationOut,
        _ => JobOperation::Other,
    });
    JobInfo {
        kind,
        operation,
        elapsed_ms: stats.time_elapsed,
        data_remaining_bytes: stats.data_remaining,
    }
}

/// Maps libvirt's (state, reason) onto the agent's states. A domain paused for a migration is
/// asked for its job to tell the incoming side from the outgoing one; without an answer it counts
/// as outgoing (still active here), which never produces a false "not running".
fn classify_state(dom: &Domain, name: &str, uri: &str) -> Result<DomainState, HvError> {
    use virt::enumutil::Enum;
    let (state, reason) = dom.state().map_err(|e| classify(Op::State, name, uri, e))?;
    let paused_reason = match reason {
        virt::domain::DomainStateReasonEnum::Known(virt::domain::DomainStateReason::Paused(
            Enum::Known(r),
        )) => Some(r),
        _ => None,
    };
    Ok(match state {
        Enum::Known(VirState::NoState) | Enum::Unknown(_) => DomainState::NoState,
        Enum::Known(VirState::Running | VirState::Blocked) => DomainState::Running,
        Enum::Known(VirState::Shutdown) => DomainState::InShutdown,
        Enum::Known(VirState::Shutoff) => DomainState::ShutOff,
        Enum::Known(VirState::Crashed) => DomainState::Crashed,
        Enum::Known(VirState::PMSuspended) => DomainState::PmSuspended,
        Enum::Known(VirState::Paused) => match paused_reason {
            Some(DomainPausedReason::User) => DomainState::Paused(PauseReason::User),
            Some(DomainPausedReason::IOError) => DomainState::Paused(PauseReason::IoError),
            Some(DomainPausedReason::ShuttingDown) => DomainState::InShutdown,
            Some(DomainPausedReason::Crashed) => DomainState::Crashed,
            // A migration target is "paused, starting up" in libvirt 9 (observed), older ones
            // say "paused, migration"; the job tells the direction when libvirt reports it.
            Some(
                r @ (DomainPausedReason::Migration
                | DomainPausedReason::PostCopy
                | DomainPausedReason::StartingUp),
            ) => match dom.job_stats(0).ok().map(|s| job_from(&s).operation) {
                Some(Some(JobOperation::MigrationIn)) => DomainState::MigratingIn,
                Some(Some(JobOperation::MigrationOut)) => DomainState::MigratingOut,
                _ if r == DomainPausedReason::StartingUp => DomainState::StartingUp,
                _ => DomainState::MigratingOut,
            },
            _ => DomainState::Paused(PauseReason::Other),
        },
    })
}

impl Hypervisor for Libvirt {
    fn uri(&self) -> String {
        self.uri
            .clone()
            .unwrap_or_else(|| "libvirt's default URI".into())
    }

    fn state(&self, name: &str, timeout_ms: u64) -> Result<DomainState, HvError> {
        let (name, uri) = (name.to_owned(), self.uri());
        self.call(Op::State, timeout_ms, move |conn| {
            match lookup(conn, Op::State, &name, &uri) {
                Ok(dom) => classify_state(&dom, &name, &uri),
                Err(HvError::NoDomain { .. }) => Ok(DomainState::Absent),
                Err(e) => Err(e),
            }
        })
    }

    fn create(&self, xml: &str, timeout_ms: u64) -> Result<(), HvError> {
        let (xml, uri) = (xml.to_owned(), self.uri());
        let name = crate::config::domain_name_from_xml(&xml).unwrap_or_default();
        self.call(Op::Create, timeout_ms, move |conn| {
            conn.create_domain_xml(&xml, 0)
                .map(|_| ())
                .map_err(|e| classify(Op::Create, &name, &uri, e))
        })
    }

    fn shutdown(&self, name: &str, modes: &ShutdownModes, timeout_ms: u64) -> Result<(), HvError> {
        let (name, uri, flags) = (name.to_owned(), self.uri(), modes.flags());
        self.call(Op::Shutdown, timeout_ms, move |conn| {
            let dom = lookup(conn, Op::Shutdown, &name, &uri)?;
            dom.shutdown_flags(flags)
                .map_err(|e| classify(Op::Shutdown, &name, &uri, e))
        })
    }

    fn destroy(&self, name: &str, timeout_ms: u64) -> Result<(), HvError> {
        let (name, uri) = (name.to_owned(), self.uri());
        self.call(Op::Destroy, timeout_ms, move |conn| {
            let dom = lookup(conn, Op::Destroy, &name, &uri)?;
            dom.destroy()
                .map_err(|e| classify(Op::Destroy, &name, &uri, e))
        })
    }

    fn info(&self, name: &str, timeout_ms: u64) -> Result<DomainInfo, HvError> {
        let (name, uri) = (name.to_owned(), self.uri());
        self.call(Op::Info, timeout_ms, move |conn| {
            let dom = lookup(conn, Op::Info, &name, &uri)?;
            let i = dom.info().map_err(|e| classify(Op::Info, &name, &uri, e))?;
            Ok(DomainInfo {
                vcpus: i.nr_virt_cpu,
                max_memory_kib: i.max_mem,
                memory_kib: i.memory,
            })
        })
    }

    fn migrate(&self, name: &str, req: &MigrateRequest, timeout_ms: u64) -> Result<(), HvError> {
        let (name, uri, req) = (name.to_owned(), self.uri(), req.clone());
        self.call(Op::Migrate, timeout_ms, move |conn| {
            let dom = lookup(conn, Op::Migrate, &name, &uri)?;
            let err = |e| classify(Op::Migrate, &name, &uri, e);
            if let Some(ms) = req.max_downtime_ms {
                dom.migrate_set_max_downtime(ms, 0).map_err(err)?;
            }
            let params = virt::domain::MigrateParameters {
                uri: req.migrate_uri.clone(),
                bandwidth: req.bandwidth_mib_s,
                ..Default::default()
            };
            let flags = MIGRATE_LIVE | req.extra_flags;
            if flags & MIGRATE_PEER2PEER != 0 {
                dom.migrate_to_uri3(Some(&req.target_uri), params, flags)
                    .map_err(err)
            } else {
                let target =
                    Connect::open(Some(&req.target_uri)).map_err(|e| HvError::Unavailable {
                        op: Op::Migrate,
                        uri: req.target_uri.clone(),
                        message: e.message().to_owned(),
                    })?;
                let result = dom
                    .migrate3(&target, params, flags)
                    .map(|_| ())
                    .map_err(err);
                std::mem::forget(target);
                result
            }
        })
    }

    fn abort_job(&self, name: &str, timeout_ms: u64) -> Result<(), HvError> {
        let (name, uri) = (name.to_owned(), self.uri());
        self.call(Op::AbortJob, timeout_ms, move |conn| {
            let dom = lookup(conn, Op::AbortJob, &name, &uri)?;
            abort_job_raw(&dom).map_err(|e| classify(Op::AbortJob, &name, &uri, e))
        })
    }

    fn resume(&self, name: &str, timeout_ms: u64) -> Result<(), HvError> {
        let (name, uri) = (name.to_owned(), self.uri());
        self.call(Op::Resume, timeout_ms, move |conn| {
            let dom = lookup(conn, Op::Resume, &name, &uri)?;
            dom.resume()
                .map(|_| ())
                .map_err(|e| classify(Op::Resume, &name, &uri, e))
        })
    }

    fn job_info(&self, name: &str, timeout_ms: u64) -> Result<JobInfo, HvError> {
        let (name, uri) = (name.to_owned(), self.uri());
        self.call(Op::JobInfo, timeout_ms, move |conn| {
            let dom = lookup(conn, Op::JobInfo, &name, &uri)?;
            dom.job_stats(0)
                .map(|s| job_from(&s))
                .map_err(|e| classify(Op::JobInfo, &name, &uri, e))
        })
    }

    fn saved_xml(&self, name: &str, timeout_ms: u64) -> Result<String, HvError> {
        let (name, uri) = (name.to_owned(), self.uri());
        let flags = virt::sys::VIR_DOMAIN_XML_INACTIVE | virt::sys::VIR_DOMAIN_XML_SECURE;
        self.call(Op::Xml, timeout_ms, move |conn| {
            let dom = lookup(conn, Op::Xml, &name, &uri)?;
            dom.xml_desc(flags)
                .map_err(|e| classify(Op::Xml, &name, &uri, e))
        })
    }

    fn save_state(&self, name: &str, path: &str, timeout_ms: u64) -> Result<(), HvError> {
        let (name, uri, path) = (name.to_owned(), self.uri(), path.to_owned());
        self.call(Op::Save, timeout_ms, move |conn| {
            let dom = lookup(conn, Op::Save, &name, &uri)?;
            save_raw(&dom, &path).map_err(|e| classify(Op::Save, &name, &uri, e))
        })
    }

    fn restore_state(&self, path: &str, timeout_ms: u64) -> Result<(), HvError> {
        let (uri, path) = (self.uri(), path.to_owned());
        self.call(Op::Restore, timeout_ms, move |conn| {
            conn.restore_domain(&path)
                .map_err(|e| classify(Op::Restore, &path, &uri, e))
        })
    }

    fn ensure_pool(&self, pool: &str, timeout_ms: u64) -> Result<bool, HvError> {
        let (pool, uri) = (pool.to_owned(), self.uri());
        self.call(Op::Pool, timeout_ms, move |conn| {
            let err = |e| classify(Op::Pool, &pool, &uri, e);
            let p = conn.lookup_storage_pool_by_name(&pool).map_err(err)?;
            if p.is_active().map_err(err)? {
                p.refresh(0).map_err(err)?;
                Ok(false)
            } else {
                p.create(0).map_err(err)?;
                Ok(true)
            }
        })
    }

    fn ensure_network(&self, network: &str, timeout_ms: u64) -> Result<bool, HvError> {
        let (network, uri) = (network.to_owned(), self.uri());
        self.call(Op::Network, timeout_ms, move |conn| {
            let err = |e| classify(Op::Network, &network, &uri, e);
            let n = conn.lookup_network_by_name(&network).map_err(err)?;
            if n.is_active().map_err(err)? {
                Ok(false)
            } else {
                n.create().map_err(err)?;
                Ok(true)
            }
        })
    }

    fn emulator_processes(&self, name: &str) -> ProcessCheck {
        if !self.has_qemu_processes() {
            return ProcessCheck::Unknown(format!(
                "{} does not run domains as local QEMU processes",
                self.uri()
            ));
        }
        match crate::procscan::qemu_pids(Path::new("/proc"), name) {
            Ok(pids) if pids.is_empty() => ProcessCheck::Absent,
            Ok(pids) => ProcessCheck::Present(pids),
            Err(e) => ProcessCheck::Unknown(format!("/proc unreadable: {e}")),
        }
    }

    fn kill_emulator(&self, name: &str, timeout_ms: u64) -> Result<String, KillRefused> {
        let run_dir = crate::qemukill::run_dir(self.uri.as_deref()).ok_or_else(|| {
            KillRefused(format!(
                "{} is not a local system QEMU daemon whose run directory is known",
                self.uri()
            ))
        })?;
        crate::qemukill::kill(&run_dir, name, timeout_ms).map_err(KillRefused)
    }
}

/// Ends the process at once with `code`, without exit handlers: what a process that used
/// [`Libvirt`] must leave by, after its output is written and flushed (`_exit(2)` writes nothing).
///
/// Threads may still be inside libvirt when the agent has its answer: a call abandoned at its
/// timeout, a worker dropping its connection after it sent its result, the thread `Drop` closes the
/// connection on (a `virConnectClose` is a round trip to the daemon). A normal `exit(3)` runs
/// `atexit` handlers and every loaded library's destructors on the main thread meanwhile, and some
/// of libvirt's dependencies free their global state there (libxml2 cleans up its parser, gnutls
/// and p11-kit deinitialise, libselinux frees its mount data): memory a libvirt thread may be
/// using at that moment. Observed under 90 concurrent agents on one daemon: a monitor that had its
/// answer died of glibc's "malloc_consolidate(): invalid chunk size". `_exit` runs none of that:
/// the kernel ends every thread where it stands, and the daemon sees the socket close.
#[allow(unsafe_code)]
pub fn exit_process(code: u8) -> ! {
    // SAFETY: `_exit` takes a plain int, touches no memory of this process and never returns.
    unsafe { libc::_exit(i32::from(code)) }
}

/// `virDomainSave`, which the `virt` crate does not wrap.
#[allow(unsafe_code)]
fn save_raw(dom: &Domain, path: &str) -> Result<(), virt::error::Error> {
    let Ok(c_path) = std::ffi::CString::new(path) else {
        return Err(virt::error::Error::last_error());
    };
    // SAFETY: `dom` owns a valid virDomainPtr and `c_path` a NUL-terminated string, both alive for
    // the whole call, which only borrows them; failure comes back as the return value and
    // libvirt's thread-local last error.
    let rc = unsafe { virt::sys::virDomainSave(dom.as_ptr(), c_path.as_ptr()) };
    if rc < 0 {
        Err(virt::error::Error::last_error())
    } else {
        Ok(())
    }
}

/// `virDomainAbortJob`, which the `virt` crate does not wrap.
#[allow(unsafe_code)]
fn abort_job_raw(dom: &Domain) -> Result<(), virt::error::Error> {
    // SAFETY: `dom` owns a valid virDomainPtr for the whole call; virDomainAbortJob only borrows it
    // and reports failure through its return value and libvirt's thread-local last error.
    let rc = unsafe { virt::sys::virDomainAbortJob(dom.as_ptr()) };
    if rc < 0 {
        Err(virt::error::Error::last_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_checks_only_for_local_qemu() {
        assert!(Libvirt::new(None).has_qemu_processes());
        assert!(Libvirt::new(Some("qemu:///system")).has_qemu_processes());
        assert!(Libvirt::new(Some("qemu+unix:///system?socket=/tmp/s")).has_qemu_processes());
        assert!(!Libvirt::new(Some("qemu+ssh://host/system")).has_qemu_processes());
        assert!(!Libvirt::new(Some("test:///default")).has_qemu_processes());
        assert!(matches!(
            Libvirt::new(Some("test:///default")).emulator_processes("x"),
            ProcessCheck::Unknown(_)
        ));
    }

    #[test]
    fn unreachable_daemon_is_unavailable_not_hung() {
        let hv = Libvirt::new(Some("qemu+unix:///system?socket=/nonexistent/libvirt-sock"));
        let e = hv.state("vm1", 5_000).unwrap_err();
        assert!(matches!(e, HvError::Unavailable { .. }), "{e}");
    }

    #[test]
    fn a_hung_daemon_costs_only_the_timeout() {
        // A unix socket that accepts connections and never answers: a hung libvirtd.
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("sock");
        let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let hv = Libvirt::new(Some(&format!(
            "qemu+unix:///system?socket={}",
            sock.display()
        )));
        let e = hv.state("vm1", 300).unwrap_err();
        assert!(
            matches!(
                e,
                HvError::Timeout {
                    timeout_ms: 300,
                    ..
                }
            ),
            "{e}"
        );
        drop(listener);
        std::mem::forget(hv); // its worker is still blocked in libvirt
    }
}
