//! The `Hypervisor` trait: everything the agent asks of libvirt, each call bounded by an explicit
//! timeout, with typed domain states and errors. Implemented by `libvirt::Libvirt` (real) and
//! `mem::MemHypervisor` (in-memory, scripted faults).

use std::fmt;

/// What the hypervisor says about one domain, classified for the agent's decisions.
///
/// libvirt's (state, reason) pairs map onto this enum in `libvirt.rs`; the actions map it onto OCF
/// codes (table in `actions.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DomainState {
    /// No domain of that name is known to this hypervisor.
    Absent,
    /// Defined (persistent) but not running.
    ShutOff,
    /// Running, blocked or idle: guest code runs here.
    Running,
    /// Paused for a reason other than a migration.
    Paused(PauseReason),
    /// The guest is shutting down (from inside or after our request).
    InShutdown,
    /// Crashed; the emulator may still hold the domain's resources (`on_crash=preserve`).
    Crashed,
    /// Suspended by the guest's power management (still holds its memory and disks).
    PmSuspended,
    /// The target side of a migration: the domain exists here but the guest does not run here yet.
    MigratingIn,
    /// Paused while starting up: an emulator exists but the guest has not run yet (a start in
    /// progress, or an incoming migration that libvirt does not label as one, or its leftover).
    StartingUp,
    /// The source side of a migration that paused the guest here (offline or post-copy phase):
    /// this is still the copy that counts until the migration completes.
    MigratingOut,
    /// The hypervisor reports no state (transient; ask again).
    NoState,
}

impl DomainState {
    /// Whether anything of the domain exists as a running emulator here (everything but absent and
    /// shut off). A domain in any of these states must be destroyed before it counts as stopped.
    pub fn is_active(&self) -> bool {
        !matches!(self, Self::Absent | Self::ShutOff)
    }
}

impl fmt::Display for DomainState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Absent => f.write_str("not defined"),
            Self::ShutOff => f.write_str("shut off"),
            Self::Running => f.write_str("running"),
            Self::Paused(r) => write!(f, "paused ({r})"),
            Self::InShutdown => f.write_str("in shutdown"),
            Self::Crashed => f.write_str("crashed"),
            Self::PmSuspended => f.write_str("suspended by guest power management"),
            Self::MigratingIn => f.write_str("incoming migration (paused, not yet running here)"),
            Self::StartingUp => f.write_str("starting up (paused, the guest has not run yet)"),
            Self::MigratingOut => f.write_str("outgoing migration (paused here)"),
            Self::NoState => f.write_str("no state"),
        }
    }
}

/// Why a domain is paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseReason {
    /// An administrator or tool paused it on purpose.
    User,
    /// Storage failed under it (`on_error=stop`): the guest cannot make progress.
    IoError,
    /// Any other reason (save, dump, snapshot, watchdog, starting up, ...).
    Other,
}

impl fmt::Display for PauseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::User => "by user",
            Self::IoError => "I/O error",
            Self::Other => "other reason",
        })
    }
}

/// One graceful shutdown method (`shutdown_mode`, libvirt's `virDomainShutdownFlagValues`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ShutdownMode {
    Acpi,
    Agent,
    Initctl,
    Signal,
    Paravirt,
}

impl ShutdownMode {
    pub const ALL: [ShutdownMode; 5] = [
        Self::Acpi,
        Self::Agent,
        Self::Initctl,
        Self::Signal,
        Self::Paravirt,
    ];
    /// The name `virsh shutdown --mode` uses.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Acpi => "acpi",
            Self::Agent => "agent",
            Self::Initctl => "initctl",
            Self::Signal => "signal",
            Self::Paravirt => "paravirt",
        }
    }
    /// libvirt's flag bit.
    pub const fn flag(self) -> u32 {
        match self {
            Self::Acpi => 1,
            Self::Agent => 2,
            Self::Initctl => 4,
            Self::Signal => 8,
            Self::Paravirt => 16,
        }
    }
}

/// A set of shutdown modes; empty lets the hypervisor choose.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShutdownModes(pub Vec<ShutdownMode>);

impl ShutdownModes {
    /// libvirt flags (0 = hypervisor's choice).
    pub fn flags(&self) -> u32 {
        self.0.iter().fold(0, |acc, m| acc | m.flag())
    }
}

impl fmt::Display for ShutdownModes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("default");
        }
        let names: Vec<&str> = self.0.iter().map(|m| m.as_str()).collect();
        f.write_str(&names.join(","))
    }
}

/// Sizes of a domain, for utilization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DomainInfo {
    pub vcpus: u32,
    pub max_memory_kib: u64,
    pub memory_kib: u64,
}

/// The kind of background job on a domain (`virDomainJobType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    None,
    Bounded,
    Unbounded,
    Completed,
    Failed,
    Cancelled,
}

/// Which operation a job belongs to (`virDomainJobOperation`), when libvirt says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobOperation {
    MigrationOut,
    MigrationIn,
    Other,
}

/// A domain's current background job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    pub kind: JobKind,
    pub operation: Option<JobOperation>,
    pub elapsed_ms: Option<u64>,
    pub data_remaining_bytes: Option<u64>,
}

impl JobInfo {
    pub const NONE: JobInfo = JobInfo {
        kind: JobKind::None,
        operation: None,
        elapsed_ms: None,
        data_remaining_bytes: None,
    };
    /// A job that is still running.
    pub fn in_flight(&self) -> bool {
        matches!(self.kind, JobKind::Bounded | JobKind::Unbounded)
    }
}

/// One live migration as the agent asks for it (built by `migration::request`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrateRequest {
    /// libvirt URI of the target hypervisor.
    pub target_uri: String,
    /// Data-channel URI (`migrateuri`), if any.
    pub migrate_uri: Option<String>,
    /// Extra `virDomainMigrateFlags` bits (p2p, tunnelled, compressed, ...); live is always set.
    pub extra_flags: u32,
    pub bandwidth_mib_s: Option<u64>,
    pub max_downtime_ms: Option<u64>,
}

/// Whether an emulator process for a domain exists on this host, judged without the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessCheck {
    /// No emulator process names this domain.
    Absent,
    /// These process ids do.
    Present(Vec<u32>),
    /// This kind of hypervisor has no process to look for, or the process table is unreadable.
    Unknown(String),
}

/// The call that failed, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Connect,
    State,
    Create,
    Shutdown,
    Destroy,
    Info,
    Migrate,
    AbortJob,
    JobInfo,
    Resume,
    Xml,
    Pool,
    Network,
    Save,
    Restore,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Connect => "connect",
            Self::State => "domain state",
            Self::Create => "create",
            Self::Shutdown => "shutdown",
            Self::Destroy => "destroy",
            Self::Info => "domain info",
            Self::Migrate => "migrate",
            Self::AbortJob => "abort job",
            Self::JobInfo => "job info",
            Self::Resume => "resume",
            Self::Xml => "domain XML",
            Self::Pool => "storage pool",
            Self::Network => "virtual network",
            Self::Save => "save",
            Self::Restore => "restore",
        })
    }
}

/// Why a hypervisor call did not give an answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HvError {
    /// The call did not return within its timeout (a hung daemon); it may still take effect.
    #[error("{op}: no answer from {uri} within {timeout_ms} ms")]
    Timeout {
        op: Op,
        uri: String,
        timeout_ms: u64,
    },
    /// The daemon cannot be reached (not running, socket missing, connection refused or lost).
    #[error("{op}: hypervisor {uri} unreachable: {message}")]
    Unavailable {
        op: Op,
        uri: String,
        message: String,
    },
    #[error("{op}: domain {name} not found")]
    NoDomain { op: Op, name: String },
    /// The operation needs a running domain and it is not.
    #[error("{op}: domain {name} is not running")]
    NotRunning { op: Op, name: String },
    /// Any other refusal or failure, with libvirt's message.
    #[error("{op} {name}: {message}")]
    Failed {
        op: Op,
        name: String,
        message: String,
    },
}

impl HvError {
    /// A hung or unreachable daemon: the state of the domain is unknown from the daemon's side.
    pub fn daemon_unusable(&self) -> bool {
        matches!(self, Self::Timeout { .. } | Self::Unavailable { .. })
    }
}

/// The local hypervisor, as the agent sees it. Every call takes the time it may use; an
/// implementation must return (with [`HvError::Timeout`]) by then, whatever the daemon does.
pub trait Hypervisor: Send + Sync {
    /// The connection URI, for messages ("default" when libvirt chooses).
    fn uri(&self) -> String;
    /// One state query.
    fn state(&self, name: &str, timeout_ms: u64) -> Result<DomainState, HvError>;
    /// Creates and starts a transient domain from its XML (`virDomainCreateXML`).
    fn create(&self, xml: &str, timeout_ms: u64) -> Result<(), HvError>;
    /// Asks the guest to shut down; returns once the request is delivered, not when it is off.
    fn shutdown(&self, name: &str, modes: &ShutdownModes, timeout_ms: u64) -> Result<(), HvError>;
    /// Stops the domain at once (the emulator is killed).
    fn destroy(&self, name: &str, timeout_ms: u64) -> Result<(), HvError>;
    /// vCPUs and memory.
    fn info(&self, name: &str, timeout_ms: u64) -> Result<DomainInfo, HvError>;
    /// Live-migrates the domain; returns when libvirt's migration call returns.
    fn migrate(&self, name: &str, req: &MigrateRequest, timeout_ms: u64) -> Result<(), HvError>;
    /// Aborts the domain's current job (a migration in flight).
    fn abort_job(&self, name: &str, timeout_ms: u64) -> Result<(), HvError>;
    /// Resumes a paused domain (`virDomainResume`): used only for a source left paused by a
    /// migration that lost its client, when the target shows no copy.
    fn resume(&self, name: &str, timeout_ms: u64) -> Result<(), HvError>;
    /// The domain's current job, if any.
    fn job_info(&self, name: &str, timeout_ms: u64) -> Result<JobInfo, HvError>;
    /// The domain's persistent XML with its secrets (`virsh dumpxml --inactive --security-info`):
    /// what `save_config_on_stop` writes back to `config`. The default: not supported.
    fn saved_xml(&self, name: &str, timeout_ms: u64) -> Result<String, HvError> {
        let _ = timeout_ms;
        Err(HvError::Failed {
            op: Op::Xml,
            name: name.to_owned(),
            message: format!("{} cannot give a domain's XML", self.uri()),
        })
    }
    /// `start_resources`: starts the storage pool when inactive, else refreshes it (heartbeat's
    /// `pool-start` / `pool-refresh`); `Ok(true)` when it was started. Default: not supported.
    fn ensure_pool(&self, pool: &str, timeout_ms: u64) -> Result<bool, HvError> {
        let _ = timeout_ms;
        Err(unsupported(Op::Pool, pool, &self.uri()))
    }
    /// `start_resources`: starts the virtual network when inactive; `Ok(true)` when it was
    /// started. Default: not supported.
    fn ensure_network(&self, network: &str, timeout_ms: u64) -> Result<bool, HvError> {
        let _ = timeout_ms;
        Err(unsupported(Op::Network, network, &self.uri()))
    }
    /// `snapshot`: saves the running domain's memory state to `path` and stops it
    /// (`virDomainSave`). Default: not supported.
    fn save_state(&self, name: &str, path: &str, timeout_ms: u64) -> Result<(), HvError> {
        let _ = (path, timeout_ms);
        Err(unsupported(Op::Save, name, &self.uri()))
    }
    /// `snapshot`: starts a domain from a state file `save_state` wrote (`virDomainRestore`).
    /// Default: not supported.
    fn restore_state(&self, path: &str, timeout_ms: u64) -> Result<(), HvError> {
        let _ = timeout_ms;
        Err(unsupported(Op::Restore, path, &self.uri()))
    }
    /// Whether an emulator process for the domain exists here, without asking the daemon.
    fn emulator_processes(&self, name: &str) -> ProcessCheck;
    /// Ends the domain's emulator process without the daemon (a stop while it does not answer):
    /// only a process proven to be this domain's of this daemon (`qemukill.rs`), within
    /// `timeout_ms`. `Ok` says what was done once the process is gone; `Err` why not. The default
    /// refuses: only a hypervisor that knows where its daemon records its processes may kill.
    fn kill_emulator(&self, name: &str, timeout_ms: u64) -> Result<String, KillRefused> {
        let _ = timeout_ms;
        Err(KillRefused(format!(
            "{} cannot end domain {name}'s process without its daemon",
            self.uri()
        )))
    }
}

fn unsupported(op: Op, name: &str, uri: &str) -> HvError {
    HvError::Failed {
        op,
        name: name.to_owned(),
        message: format!("not supported by {uri}"),
    }
}

/// Why [`Hypervisor::kill_emulator`] did not end a process.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KillRefused(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shutdown_flags_match_libvirt() {
        let m = ShutdownModes(vec![ShutdownMode::Acpi, ShutdownMode::Agent]);
        assert_eq!(m.flags(), 3);
        assert_eq!(m.to_string(), "acpi,agent");
        assert_eq!(ShutdownModes::default().flags(), 0);
        assert_eq!(ShutdownMode::Paravirt.flag(), 16);
    }

    #[test]
    fn only_absent_and_shut_off_are_inactive() {
        assert!(!DomainState::Absent.is_active());
        assert!(!DomainState::ShutOff.is_active());
        for s in [
            DomainState::Running,
            DomainState::Paused(PauseReason::User),
            DomainState::InShutdown,
            DomainState::Crashed,
            DomainState::PmSuspended,
            DomainState::MigratingIn,
            DomainState::StartingUp,
            DomainState::MigratingOut,
            DomainState::NoState,
        ] {
            assert!(s.is_active(), "{s}");
        }
    }
}
