//! An in-memory hypervisor for unit tests and the simulator: a [`MemWorld`] of named nodes sharing
//! one clock, each node a [`MemHypervisor`], with scripted faults (daemon down or hung, one call
//! failing, hanging, or hanging after taking effect) and time-based guest behaviour (shutdown
//! delays, live migrations that take time and can be aborted).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::clock::Clock;
use crate::hypervisor::{
    DomainInfo, DomainState, HvError, Hypervisor, JobInfo, JobKind, JobOperation, KillRefused,
    MigrateRequest, Op, ProcessCheck, ShutdownModes,
};

/// The daemon's health on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Daemon {
    #[default]
    Up,
    /// Not running: every call fails at once as unreachable.
    Down,
    /// Accepts connections and never answers: every call uses its whole timeout.
    Hung,
}

/// A fault for the next call of one operation on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The call fails with this message.
    Error(String),
    /// The call does nothing and never answers (times out).
    Hang,
    /// The call takes effect, then never answers (times out).
    HangAfterEffect,
    /// The call takes effect (a migration: starts and goes on), then reports this error.
    ErrorAfterEffect(String),
    /// The daemon is unreachable for this call.
    Down,
}

/// How a guest reacts to a graceful shutdown request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestShutdown {
    /// Powers off this many ms after the request (in shutdown meanwhile).
    After { ms: u64 },
    /// Ignores it (no OS, hung guest, no ACPI).
    Ignore,
}

/// One domain on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemDomain {
    pub xml: String,
    pub state: DomainState,
    pub info: DomainInfo,
    /// Persistent domains become shut off when stopped; transient ones vanish.
    pub persistent: bool,
    /// An emulator process exists (seen by [`Hypervisor::emulator_processes`] even with the daemon
    /// down).
    pub process: bool,
    pub guest_shutdown: GuestShutdown,
    /// The shutdown modes of the last shutdown request, for tests.
    pub last_shutdown_modes: Option<ShutdownModes>,
    off_at_ms: Option<u64>,
    job: JobInfo,
}

impl MemDomain {
    /// A running transient domain, as `create` makes it.
    pub fn running(xml: &str) -> Self {
        Self {
            xml: xml.to_owned(),
            state: DomainState::Running,
            info: DomainInfo {
                vcpus: 1,
                max_memory_kib: 32 * 1024,
                memory_kib: 32 * 1024,
            },
            persistent: false,
            process: true,
            guest_shutdown: GuestShutdown::After { ms: 1_000 },
            last_shutdown_modes: None,
            off_at_ms: None,
            job: JobInfo::NONE,
        }
    }
    /// The same domain in another state (process present iff active).
    pub fn with_state(mut self, state: DomainState) -> Self {
        self.process = state.is_active();
        self.state = state;
        self
    }
}

#[derive(Debug, Default)]
struct Node {
    daemon: Daemon,
    domains: BTreeMap<String, MemDomain>,
    /// Storage pools ("pool:NAME") and virtual networks ("network:NAME"): active or not.
    resources: BTreeMap<String, bool>,
    faults: Vec<(Op, Fault)>,
    calls: Vec<String>,
}

#[derive(Debug, Clone)]
struct Migration {
    name: String,
    source: String,
    target: String,
    done_at_ms: u64,
}

#[derive(Debug, Default)]
struct World {
    nodes: BTreeMap<String, Node>,
    migrations: Vec<Migration>,
    /// How long a live migration takes.
    migration_ms: u64,
    /// What every call costs before it answers (0: nothing); a call given less times out.
    call_ms: u64,
    /// What a state reading answers for a migration's incoming copy (None: `MigratingIn`).
    incoming_reads_as: Option<DomainState>,
}

/// Shared state of all in-memory nodes. Cloning shares it.
#[derive(Clone)]
pub struct MemWorld {
    inner: Arc<Mutex<World>>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for MemWorld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemWorld").finish_non_exhaustive()
    }
}

/// One node's hypervisor in a [`MemWorld`].
#[derive(Debug, Clone)]
pub struct MemHypervisor {
    world: MemWorld,
    node: String,
}

impl MemWorld {
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        let world = World {
            migration_ms: 500,
            ..World::default()
        };
        Self {
            inner: Arc::new(Mutex::new(world)),
            clock,
        }
    }

    fn lock(&self) -> MutexGuard<'_, World> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The hypervisor of `node` (created empty on first use).
    pub fn node(&self, node: &str) -> MemHypervisor {
        self.lock().nodes.entry(node.to_owned()).or_default();
        MemHypervisor {
            world: self.clone(),
            node: node.to_owned(),
        }
    }

    pub fn set_daemon(&self, node: &str, daemon: Daemon) {
        self.lock().nodes.entry(node.to_owned()).or_default().daemon = daemon;
    }

    /// The next call of `op` on `node` meets `fault` (faults queue per op, first in first out).
    pub fn inject(&self, node: &str, op: Op, fault: Fault) {
        self.lock()
            .nodes
            .entry(node.to_owned())
            .or_default()
            .faults
            .push((op, fault));
    }

    /// How long each live migration takes from now on.
    pub fn set_migration_ms(&self, ms: u64) {
        self.lock().migration_ms = ms;
    }

    /// What a state reading on the target answers for a migration's incoming copy from now on.
    /// The default, `MigratingIn`, is libvirt when its job query answers; libvirt 9 shows the
    /// incoming copy paused "for a migration" like the outgoing one, so without a job answer it
    /// reads as `MigratingOut` (or `Paused` for another reason while it settles). The copy itself
    /// stays an incoming one: only the reading changes.
    pub fn set_incoming_reads_as(&self, state: DomainState) {
        self.lock().incoming_reads_as = Some(state);
    }

    /// What every call costs from now on (a loaded daemon); a call given less times out having
    /// used its whole timeout. 0 (the default): calls answer at once, whatever their timeout.
    pub fn set_call_ms(&self, ms: u64) {
        self.lock().call_ms = ms;
    }

    /// Defines a storage pool (`kind` "pool") or virtual network ("network") on `node`.
    pub fn put_resource(&self, node: &str, kind: &str, name: &str, active: bool) {
        let mut w = self.lock();
        let n = w.nodes.entry(node.to_owned()).or_default();
        n.resources.insert(format!("{kind}:{name}"), active);
    }

    /// Whether a pool or network is active; `None` when not defined.
    pub fn resource_active(&self, node: &str, kind: &str, name: &str) -> Option<bool> {
        let w = self.lock();
        let n = w.nodes.get(node)?;
        n.resources.get(&format!("{kind}:{name}")).copied()
    }

    pub fn put_domain(&self, node: &str, name: &str, domain: MemDomain) {
        self.lock()
            .nodes
            .entry(node.to_owned())
            .or_default()
            .domains
            .insert(name.to_owned(), domain);
    }

    /// Changes one domain in place (no-op if absent).
    pub fn update_domain(&self, node: &str, name: &str, f: impl FnOnce(&mut MemDomain)) {
        let mut w = self.lock();
        if let Some(d) = w.nodes.get_mut(node).and_then(|n| n.domains.get_mut(name)) {
            f(d);
        }
    }

    /// The domain stops by itself `after_ms` from now (a leftover that libvirt tears down).
    pub fn expire_domain(&self, node: &str, name: &str, after_ms: u64) {
        let at = self.clock.now_ms() + after_ms;
        self.update_domain(node, name, |d| d.off_at_ms = Some(at));
    }

    /// The ground truth (no faults applied), after time-based transitions.
    pub fn domain(&self, node: &str, name: &str) -> Option<MemDomain> {
        let now = self.clock.now_ms();
        let mut w = self.lock();
        tick(&mut w, now);
        w.nodes.get(node).and_then(|n| n.domains.get(name)).cloned()
    }

    /// Nodes where guest code of `name` runs (the invariant: at most one).
    pub fn running_on(&self, name: &str) -> Vec<String> {
        let now = self.clock.now_ms();
        let mut w = self.lock();
        tick(&mut w, now);
        w.nodes
            .iter()
            .filter(|(_, n)| {
                n.domains.get(name).is_some_and(|d| {
                    matches!(
                        d.state,
                        DomainState::Running
                            | DomainState::InShutdown
                            | DomainState::Paused(_)
                            | DomainState::PmSuspended
                            | DomainState::MigratingOut
                    )
                })
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Every call made on `node`, as `op name`, in order.
    pub fn calls(&self, node: &str) -> Vec<String> {
        self.lock()
            .nodes
            .get(node)
            .map(|n| n.calls.clone())
            .unwrap_or_default()
    }
}

/// Applies the transitions whose time has come: guests that finished shutting down, migrations
/// that completed.
fn tick(w: &mut World, now_ms: u64) {
    for node in w.nodes.values_mut() {
        let mut gone = Vec::new();
        for (name, d) in node.domains.iter_mut() {
            if d.off_at_ms.is_some_and(|t| t <= now_ms) {
                d.off_at_ms = None;
                d.process = false;
                d.state = DomainState::ShutOff;
                if !d.persistent {
                    gone.push(name.clone());
                }
            }
        }
        for name in gone {
            node.domains.remove(&name);
        }
    }
    let (done, pending): (Vec<Migration>, Vec<Migration>) = std::mem::take(&mut w.migrations)
        .into_iter()
        .partition(|m| m.done_at_ms <= now_ms);
    w.migrations = pending;
    for m in done {
        let Some(mut d) = w
            .nodes
            .get_mut(&m.source)
            .and_then(|n| n.domains.remove(&m.name))
        else {
            continue;
        };
        d.job = JobInfo {
            kind: JobKind::Completed,
            ..JobInfo::NONE
        };
        d.state = DomainState::Running;
        d.process = true;
        if let Some(t) = w.nodes.get_mut(&m.target) {
            t.domains.insert(m.name.clone(), d);
        }
    }
}

enum Gate {
    Go,
    /// Do the effect, then time out.
    EffectThenHang,
    /// Do the effect, then fail with this message.
    EffectThenError(String),
}

impl MemHypervisor {
    pub fn node_name(&self) -> &str {
        &self.node
    }

    /// Records the call, applies daemon health and any scripted fault.
    fn gate(&self, op: Op, name: &str, timeout_ms: u64) -> Result<Gate, HvError> {
        let clock = &self.world.clock;
        let (daemon, fault, call_ms) = {
            let mut w = self.world.lock();
            tick(&mut w, clock.now_ms());
            let call_ms = w.call_ms;
            let n = w.nodes.entry(self.node.clone()).or_default();
            n.calls.push(format!("{op} {name}"));
            let fault = n
                .faults
                .iter()
                .position(|(o, _)| *o == op)
                .map(|i| n.faults.remove(i).1);
            (n.daemon, fault, call_ms)
        };
        let timeout = || HvError::Timeout {
            op,
            uri: self.uri(),
            timeout_ms,
        };
        // A hanging call uses its whole timeout, latency included.
        let hangs = matches!(fault, Some(Fault::Hang | Fault::HangAfterEffect));
        if call_ms > 0 && daemon == Daemon::Up && !hangs {
            if timeout_ms < call_ms {
                clock.sleep_ms(timeout_ms);
                return Err(timeout());
            }
            clock.sleep_ms(call_ms);
        }
        let down = |message: &str| HvError::Unavailable {
            op,
            uri: self.uri(),
            message: message.to_owned(),
        };
        match daemon {
            Daemon::Down => return Err(down("daemon not running")),
            Daemon::Hung => {
                clock.sleep_ms(timeout_ms);
                return Err(timeout());
            }
            Daemon::Up => {}
        }
        match fault {
            None => Ok(Gate::Go),
            Some(Fault::Error(message)) => Err(HvError::Failed {
                op,
                name: name.to_owned(),
                message,
            }),
            Some(Fault::Hang) => {
                clock.sleep_ms(timeout_ms);
                Err(timeout())
            }
            Some(Fault::HangAfterEffect) => Ok(Gate::EffectThenHang),
            Some(Fault::ErrorAfterEffect(message)) => Ok(Gate::EffectThenError(message)),
            Some(Fault::Down) => Err(down("connection refused")),
        }
    }

    fn finish<T>(&self, gate: Gate, op: Op, timeout_ms: u64, value: T) -> Result<T, HvError> {
        match gate {
            Gate::Go => Ok(value),
            Gate::EffectThenError(message) => Err(HvError::Failed {
                op,
                name: String::new(),
                message,
            }),
            Gate::EffectThenHang => {
                self.world.clock.sleep_ms(timeout_ms);
                Err(HvError::Timeout {
                    op,
                    uri: self.uri(),
                    timeout_ms,
                })
            }
        }
    }

    fn with_domain<T>(
        &self,
        op: Op,
        name: &str,
        f: impl FnOnce(&mut MemDomain, u64) -> Result<T, HvError>,
    ) -> Result<T, HvError> {
        let now = self.world.clock.now_ms();
        let mut w = self.world.lock();
        tick(&mut w, now);
        let node = w.nodes.entry(self.node.clone()).or_default();
        match node.domains.get_mut(name) {
            Some(d) => {
                let r = f(d, now);
                // A transient domain that stopped is gone.
                if !d.persistent && !d.state.is_active() {
                    node.domains.remove(name);
                }
                r
            }
            None => Err(HvError::NoDomain {
                op,
                name: name.to_owned(),
            }),
        }
    }
}

impl MemHypervisor {
    /// Starts a defined pool or network; `Ok(true)` when it was inactive.
    fn ensure_resource(
        &self,
        op: Op,
        kind: &str,
        name: &str,
        timeout_ms: u64,
    ) -> Result<bool, HvError> {
        let gate = self.gate(op, name, timeout_ms)?;
        let started = {
            let mut w = self.world.lock();
            let node = w.nodes.entry(self.node.clone()).or_default();
            match node.resources.get_mut(&format!("{kind}:{name}")) {
                Some(active) => !std::mem::replace(active, true),
                None => {
                    return Err(HvError::Failed {
                        op,
                        name: name.to_owned(),
                        message: format!("no {kind} named {name:?}"),
                    });
                }
            }
        };
        self.finish(gate, op, timeout_ms, started)
    }
}

impl Hypervisor for MemHypervisor {
    fn uri(&self) -> String {
        format!("mem://{}", self.node)
    }

    fn state(&self, name: &str, timeout_ms: u64) -> Result<DomainState, HvError> {
        let gate = self.gate(Op::State, name, timeout_ms)?;
        let state = match self.with_domain(Op::State, name, |d, _| Ok(d.state.clone())) {
            Err(HvError::NoDomain { .. }) => DomainState::Absent,
            other => other?,
        };
        let state = match (state, self.world.lock().incoming_reads_as.clone()) {
            (DomainState::MigratingIn, Some(shown)) => shown,
            (state, _) => state,
        };
        self.finish(gate, Op::State, timeout_ms, state)
    }

    fn create(&self, xml: &str, timeout_ms: u64) -> Result<(), HvError> {
        let name = crate::config::domain_name_from_xml(xml).map_err(|e| HvError::Failed {
            op: Op::Create,
            name: String::new(),
            message: e.to_string(),
        })?;
        let gate = self.gate(Op::Create, &name, timeout_ms)?;
        {
            let now = self.world.clock.now_ms();
            let mut w = self.world.lock();
            tick(&mut w, now);
            let node = w.nodes.entry(self.node.clone()).or_default();
            match node.domains.get_mut(&name) {
                Some(d) if d.state.is_active() => {
                    return Err(HvError::Failed {
                        op: Op::Create,
                        name,
                        message: "domain is already active".into(),
                    });
                }
                Some(d) => {
                    d.xml = xml.to_owned();
                    d.state = DomainState::Running;
                    d.process = true;
                }
                None => {
                    node.domains.insert(name, MemDomain::running(xml));
                }
            }
        }
        self.finish(gate, Op::Create, timeout_ms, ())
    }

    fn shutdown(&self, name: &str, modes: &ShutdownModes, timeout_ms: u64) -> Result<(), HvError> {
        let gate = self.gate(Op::Shutdown, name, timeout_ms)?;
        self.with_domain(Op::Shutdown, name, |d, now| {
            d.last_shutdown_modes = Some(modes.clone());
            match d.state {
                DomainState::Running | DomainState::InShutdown => {
                    if let GuestShutdown::After { ms } = d.guest_shutdown {
                        d.state = DomainState::InShutdown;
                        d.off_at_ms.get_or_insert(now + ms);
                    }
                    Ok(())
                }
                ref s if s.is_active() => Ok(()),
                _ => Err(HvError::NotRunning {
                    op: Op::Shutdown,
                    name: name.to_owned(),
                }),
            }
        })?;
        self.finish(gate, Op::Shutdown, timeout_ms, ())
    }

    fn destroy(&self, name: &str, timeout_ms: u64) -> Result<(), HvError> {
        let gate = self.gate(Op::Destroy, name, timeout_ms)?;
        self.with_domain(Op::Destroy, name, |d, _| {
            if !d.state.is_active() {
                return Err(HvError::NotRunning {
                    op: Op::Destroy,
                    name: name.to_owned(),
                });
            }
            d.state = DomainState::ShutOff;
            d.process = false;
            d.off_at_ms = None;
            Ok(())
        })?;
        // Destroying either side of a migration cancels it.
        self.world.lock().migrations.retain(|m| m.name != name);
        self.finish(gate, Op::Destroy, timeout_ms, ())
    }

    fn info(&self, name: &str, timeout_ms: u64) -> Result<DomainInfo, HvError> {
        let gate = self.gate(Op::Info, name, timeout_ms)?;
        let info = self.with_domain(Op::Info, name, |d, _| Ok(d.info))?;
        self.finish(gate, Op::Info, timeout_ms, info)
    }

    fn migrate(&self, name: &str, req: &MigrateRequest, timeout_ms: u64) -> Result<(), HvError> {
        let gate = self.gate(Op::Migrate, name, timeout_ms)?;
        let clock = self.world.clock.clone();
        let done_at_ms = {
            let now = clock.now_ms();
            let mut w = self.world.lock();
            tick(&mut w, now);
            // "mem://node2" or plainly "node2".
            let target = req
                .target_uri
                .strip_prefix("mem://")
                .unwrap_or(&req.target_uri)
                .to_owned();
            let failed = |message: &str| HvError::Failed {
                op: Op::Migrate,
                name: name.to_owned(),
                message: message.to_owned(),
            };
            let target_daemon = w.nodes.get(&target).map(|n| n.daemon);
            match target_daemon {
                None => return Err(failed("target hypervisor unknown")),
                Some(Daemon::Down) => return Err(failed("cannot connect to target hypervisor")),
                Some(Daemon::Hung) | Some(Daemon::Up) => {}
            }
            if w.migrations.iter().any(|m| m.name == name) {
                return Err(failed("another migration job is already running"));
            }
            if w.nodes
                .get(&target)
                .and_then(|n| n.domains.get(name))
                .is_some_and(|d| d.state.is_active())
            {
                return Err(failed("domain already exists on the target"));
            }
            let migration_ms = w.migration_ms;
            let source = w.nodes.entry(self.node.clone()).or_default();
            let Some(d) = source.domains.get_mut(name) else {
                return Err(HvError::NoDomain {
                    op: Op::Migrate,
                    name: name.to_owned(),
                });
            };
            if d.state != DomainState::Running {
                return Err(failed("domain is not running"));
            }
            d.job = JobInfo {
                kind: JobKind::Unbounded,
                operation: Some(JobOperation::MigrationOut),
                elapsed_ms: Some(0),
                data_remaining_bytes: None,
            };
            let mut incoming = d.clone().with_state(DomainState::MigratingIn);
            incoming.job.operation = Some(JobOperation::MigrationIn);
            if let Some(t) = w.nodes.get_mut(&target) {
                t.domains.insert(name.to_owned(), incoming);
            }
            let done_at_ms = now + migration_ms;
            w.migrations.push(Migration {
                name: name.to_owned(),
                source: self.node.clone(),
                target,
                done_at_ms,
            });
            done_at_ms
        };
        if !matches!(gate, Gate::Go) {
            return self.finish(gate, Op::Migrate, timeout_ms, ());
        }
        let wait_ms = done_at_ms.saturating_sub(clock.now_ms());
        if wait_ms > timeout_ms {
            clock.sleep_ms(timeout_ms);
            return Err(HvError::Timeout {
                op: Op::Migrate,
                uri: self.uri(),
                timeout_ms,
            });
        }
        clock.sleep_ms(wait_ms);
        // Aborted meanwhile?
        let now = clock.now_ms();
        let mut w = self.world.lock();
        tick(&mut w, now);
        let still_here = w
            .nodes
            .get(&self.node)
            .and_then(|n| n.domains.get(name))
            .is_some();
        if still_here {
            Err(HvError::Failed {
                op: Op::Migrate,
                name: name.to_owned(),
                message: "migration job was cancelled".into(),
            })
        } else {
            Ok(())
        }
    }

    fn abort_job(&self, name: &str, timeout_ms: u64) -> Result<(), HvError> {
        let gate = self.gate(Op::AbortJob, name, timeout_ms)?;
        let now = self.world.clock.now_ms();
        {
            let mut w = self.world.lock();
            tick(&mut w, now);
            let Some(pos) = w
                .migrations
                .iter()
                .position(|m| m.name == name && m.source == self.node)
            else {
                return Err(HvError::Failed {
                    op: Op::AbortJob,
                    name: name.to_owned(),
                    message: "no job is active on the domain".into(),
                });
            };
            let m = w.migrations.remove(pos);
            if let Some(t) = w.nodes.get_mut(&m.target) {
                t.domains.remove(name);
            }
            if let Some(d) = w
                .nodes
                .get_mut(&m.source)
                .and_then(|n| n.domains.get_mut(name))
            {
                d.job = JobInfo {
                    kind: JobKind::Cancelled,
                    ..JobInfo::NONE
                };
            }
        }
        self.finish(gate, Op::AbortJob, timeout_ms, ())
    }

    fn resume(&self, name: &str, timeout_ms: u64) -> Result<(), HvError> {
        let gate = self.gate(Op::Resume, name, timeout_ms)?;
        self.with_domain(Op::Resume, name, |d, _| match d.state {
            DomainState::Paused(_) | DomainState::MigratingOut => {
                d.state = DomainState::Running;
                Ok(())
            }
            DomainState::Running => Ok(()),
            _ => Err(HvError::NotRunning {
                op: Op::Resume,
                name: name.to_owned(),
            }),
        })?;
        self.finish(gate, Op::Resume, timeout_ms, ())
    }

    fn job_info(&self, name: &str, timeout_ms: u64) -> Result<JobInfo, HvError> {
        let gate = self.gate(Op::JobInfo, name, timeout_ms)?;
        let job = self.with_domain(Op::JobInfo, name, |d, _| Ok(d.job.clone()))?;
        self.finish(gate, Op::JobInfo, timeout_ms, job)
    }

    /// Writes the domain's XML to `path` (the "memory state") and removes the domain.
    fn save_state(&self, name: &str, path: &str, timeout_ms: u64) -> Result<(), HvError> {
        let gate = self.gate(Op::Save, name, timeout_ms)?;
        let xml = self.with_domain(Op::Save, name, |d, _| {
            if !d.state.is_active() {
                return Err(HvError::NotRunning {
                    op: Op::Save,
                    name: name.to_owned(),
                });
            }
            d.state = DomainState::ShutOff;
            d.process = false;
            Ok(d.xml.clone())
        })?;
        std::fs::write(path, format!("mem-state\n{xml}")).map_err(|e| HvError::Failed {
            op: Op::Save,
            name: name.to_owned(),
            message: e.to_string(),
        })?;
        self.finish(gate, Op::Save, timeout_ms, ())
    }

    /// Reads a file `save_state` wrote and runs the domain again.
    fn restore_state(&self, path: &str, timeout_ms: u64) -> Result<(), HvError> {
        let gate = self.gate(Op::Restore, path, timeout_ms)?;
        let failed = |message: String| HvError::Failed {
            op: Op::Restore,
            name: path.to_owned(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?;
        let xml = text
            .strip_prefix("mem-state\n")
            .ok_or_else(|| failed("not a saved state".into()))?;
        let name = crate::config::domain_name_from_xml(xml).map_err(|e| failed(e.to_string()))?;
        {
            let mut w = self.world.lock();
            let node = w.nodes.entry(self.node.clone()).or_default();
            if node.domains.get(&name).is_some_and(|d| d.state.is_active()) {
                return Err(failed(format!("domain {name} is already active")));
            }
            node.domains.insert(name, MemDomain::running(xml));
        }
        self.finish(gate, Op::Restore, timeout_ms, ())
    }

    fn ensure_pool(&self, pool: &str, timeout_ms: u64) -> Result<bool, HvError> {
        self.ensure_resource(Op::Pool, "pool", pool, timeout_ms)
    }

    fn ensure_network(&self, network: &str, timeout_ms: u64) -> Result<bool, HvError> {
        self.ensure_resource(Op::Network, "network", network, timeout_ms)
    }

    /// The XML the domain was created from (its changes while running, if a test made any).
    fn saved_xml(&self, name: &str, timeout_ms: u64) -> Result<String, HvError> {
        let gate = self.gate(Op::Xml, name, timeout_ms)?;
        let xml = self.with_domain(Op::Xml, name, |d, _| Ok(d.xml.clone()))?;
        self.finish(gate, Op::Xml, timeout_ms, xml)
    }

    fn emulator_processes(&self, name: &str) -> ProcessCheck {
        let now = self.world.clock.now_ms();
        let mut w = self.world.lock();
        tick(&mut w, now);
        match w.nodes.get(&self.node).and_then(|n| n.domains.get(name)) {
            Some(d) if d.process => ProcessCheck::Present(vec![4242]),
            _ => ProcessCheck::Absent,
        }
    }

    /// The process ends at once; the daemon, when asked again, shows the domain stopped.
    fn kill_emulator(&self, name: &str, _timeout_ms: u64) -> Result<String, KillRefused> {
        let now = self.world.clock.now_ms();
        let mut w = self.world.lock();
        tick(&mut w, now);
        let node = w.nodes.entry(self.node.clone()).or_default();
        node.calls.push(format!("kill emulator {name}"));
        let Some(d) = node.domains.get_mut(name).filter(|d| d.process) else {
            return Ok(format!("no process of domain {name} was left"));
        };
        d.process = false;
        d.state = DomainState::ShutOff;
        if !d.persistent {
            node.domains.remove(name);
        }
        Ok("process 4242 ended after SIGTERM".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    const XML: &str = "<domain type='qemu'><name>vm1</name></domain>";

    fn world() -> (Arc<ManualClock>, MemWorld) {
        let clock = Arc::new(ManualClock::new(0));
        (clock.clone(), MemWorld::new(clock))
    }

    #[test]
    fn create_shutdown_destroy() {
        let (clock, w) = world();
        let hv = w.node("n1");
        assert_eq!(hv.state("vm1", 100), Ok(DomainState::Absent));
        hv.create(XML, 100).unwrap();
        assert_eq!(hv.state("vm1", 100), Ok(DomainState::Running));
        assert!(hv.create(XML, 100).is_err(), "second create refused");
        hv.shutdown("vm1", &ShutdownModes::default(), 100).unwrap();
        assert_eq!(hv.state("vm1", 100), Ok(DomainState::InShutdown));
        clock.advance_ms(1_000);
        assert_eq!(hv.state("vm1", 100), Ok(DomainState::Absent), "transient");
        hv.create(XML, 100).unwrap();
        hv.destroy("vm1", 100).unwrap();
        assert_eq!(hv.emulator_processes("vm1"), ProcessCheck::Absent);
        assert!(matches!(
            hv.destroy("vm1", 100),
            Err(HvError::NoDomain { .. })
        ));
    }

    #[test]
    fn faults_hang_fail_and_down() {
        let (clock, w) = world();
        let hv = w.node("n1");
        w.inject("n1", Op::State, Fault::Hang);
        let t0 = clock.now_ms();
        assert!(matches!(
            hv.state("vm1", 700),
            Err(HvError::Timeout {
                timeout_ms: 700,
                ..
            })
        ));
        assert_eq!(clock.now_ms() - t0, 700, "a hang uses the whole timeout");
        assert_eq!(hv.state("vm1", 700), Ok(DomainState::Absent), "one-shot");
        w.inject("n1", Op::Create, Fault::HangAfterEffect);
        assert!(hv.create(XML, 100).is_err());
        assert_eq!(hv.state("vm1", 100), Ok(DomainState::Running));
        w.inject("n1", Op::Destroy, Fault::Error("boom".into()));
        assert!(
            matches!(hv.destroy("vm1", 100), Err(HvError::Failed { message, .. }) if message == "boom")
        );
        w.set_daemon("n1", Daemon::Down);
        assert!(matches!(
            hv.state("vm1", 100),
            Err(HvError::Unavailable { .. })
        ));
        assert!(matches!(
            hv.emulator_processes("vm1"),
            ProcessCheck::Present(_)
        ));
        assert_eq!(
            w.calls("n1"),
            vec![
                "domain state vm1",
                "domain state vm1",
                "create vm1",
                "domain state vm1",
                "destroy vm1",
                "domain state vm1"
            ]
        );
    }

    #[test]
    fn migration_takes_time_and_can_be_aborted() {
        let (clock, w) = world();
        let (a, b) = (w.node("a"), w.node("b"));
        w.set_migration_ms(2_000);
        a.create(XML, 100).unwrap();
        let req = MigrateRequest {
            target_uri: "b".into(),
            ..MigrateRequest::default()
        };
        // The call times out while the migration continues.
        assert!(matches!(
            a.migrate("vm1", &req, 500),
            Err(HvError::Timeout { .. })
        ));
        assert_eq!(b.state("vm1", 100), Ok(DomainState::MigratingIn));
        assert!(a.job_info("vm1", 100).unwrap().in_flight());
        assert_eq!(w.running_on("vm1"), vec!["a"]);
        a.abort_job("vm1", 100).unwrap();
        assert_eq!(b.state("vm1", 100), Ok(DomainState::Absent));
        assert_eq!(a.state("vm1", 100), Ok(DomainState::Running));
        // A complete one.
        a.migrate("vm1", &req, 5_000).unwrap();
        assert_eq!(w.running_on("vm1"), vec!["b"]);
        assert_eq!(a.state("vm1", 100), Ok(DomainState::Absent));
        assert!(clock.now_ms() >= 2_500);
    }
}
