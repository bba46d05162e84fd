//! The simulated hardware: one `MemWorld` (the agent's in-memory hypervisors, sharing domains so a
//! live migration moves a domain between two nodes) plus what `MemWorld` does not model itself:
//! power (a crash destroys every domain on the node and cancels migrations touching it), network
//! isolation, and per-node daemon health and one-shot call faults, applied by [`SimHv`], the
//! hypervisor every action sees. Ground truth for the checkers comes from here, never from the CIB.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use highlander_agent::clock::Clock;
use highlander_agent::hypervisor::{
    DomainInfo, DomainState, HvError, Hypervisor, JobInfo, JobOperation, KillRefused,
    MigrateRequest, Op, ProcessCheck, ShutdownModes,
};
use highlander_agent::mem::{Daemon, Fault, MemDomain, MemHypervisor, MemWorld};

use super::kernel::SimClock;

/// The parts of the world `MemWorld` does not hold: daemon health, queued faults, isolation.
#[derive(Debug, Default)]
struct Ctl {
    daemons: BTreeMap<String, Daemon>,
    faults: BTreeMap<String, Vec<(Op, Fault)>>,
    isolated: BTreeSet<String>,
}

/// All nodes' hypervisors.
#[derive(Clone)]
pub struct World {
    mem: MemWorld,
    ctl: Arc<Mutex<Ctl>>,
    clock: SimClock,
    nodes: Vec<String>,
    vms: Vec<String>,
}

/// The domain XML the agent creates for a VM.
pub fn domain_xml(vm: &str) -> String {
    format!("<domain type='qemu'><name>{vm}</name></domain>")
}

impl World {
    pub fn new(clock: SimClock, nodes: &[String], vms: &[String], migration_ms: u64) -> Self {
        let mem = MemWorld::new(Arc::new(clock.clone()));
        mem.set_migration_ms(migration_ms);
        for n in nodes {
            mem.node(n);
        }
        Self {
            mem,
            ctl: Arc::new(Mutex::new(Ctl::default())),
            clock,
            nodes: nodes.to_vec(),
            vms: vms.to_vec(),
        }
    }

    fn ctl(&self) -> MutexGuard<'_, Ctl> {
        self.ctl.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The hypervisor of `node` as the agent on that node sees it.
    pub fn hv(&self, node: &str) -> SimHv {
        SimHv {
            inner: self.mem.node(node),
            node: node.to_owned(),
            ctl: self.ctl.clone(),
            clock: self.clock.clone(),
        }
    }

    pub fn set_daemon(&self, node: &str, daemon: Daemon) {
        self.ctl().daemons.insert(node.to_owned(), daemon);
    }

    pub fn daemon(&self, node: &str) -> Daemon {
        self.ctl().daemons.get(node).copied().unwrap_or_default()
    }

    /// The next call of `op` on `node` meets `fault`.
    pub fn inject(&self, node: &str, op: Op, fault: Fault) {
        self.ctl()
            .faults
            .entry(node.to_owned())
            .or_default()
            .push((op, fault));
    }

    /// Forgets every queued fault (liveness phase).
    pub fn clear_faults(&self) {
        self.ctl().faults.clear();
    }

    /// Nodes where guest code of `vm` runs: the ground truth.
    pub fn running_on(&self, vm: &str) -> Vec<String> {
        self.mem.running_on(vm)
    }

    /// The domain of `vm` on `node`, if any (ground truth).
    pub fn domain(&self, node: &str, vm: &str) -> Option<MemDomain> {
        self.mem.domain(node, vm)
    }

    /// The guest crashes on its own (state crashed; the emulator stays, `on_crash=preserve`).
    pub fn crash_guest(&self, node: &str, vm: &str) -> bool {
        // A guest that dies takes its outgoing migration down with it.
        let hv = self.mem.node(node);
        if hv
            .job_info(vm, 1_000)
            .is_ok_and(|j| j.in_flight() && j.operation == Some(JobOperation::MigrationOut))
        {
            let _ = hv.abort_job(vm, 1_000);
        }
        let mut hit = false;
        self.mem.update_domain(node, vm, |d| {
            if d.state == DomainState::Running {
                d.state = DomainState::Crashed;
                hit = true;
            }
        });
        hit
    }

    /// Cancels every live migration with an end on `node` (power loss, cut network).
    pub fn cancel_migrations_touching(&self, node: &str) -> Vec<String> {
        let mut cancelled = Vec::new();
        for vm in &self.vms {
            let targets: Vec<&String> = self
                .nodes
                .iter()
                .filter(|n| {
                    self.mem
                        .domain(n, vm)
                        .is_some_and(|d| d.state == DomainState::MigratingIn)
                })
                .collect();
            if targets.is_empty() {
                continue;
            }
            for source in &self.nodes {
                let hv = self.mem.node(source);
                let out = hv.job_info(vm, 1_000).is_ok_and(|j| {
                    j.in_flight() && j.operation == Some(JobOperation::MigrationOut)
                });
                if !out {
                    continue;
                }
                if source == node || targets.iter().any(|t| *t == node) {
                    let _ = hv.abort_job(vm, 1_000);
                    cancelled.push(vm.clone());
                }
            }
        }
        cancelled
    }

    /// The node loses power: migrations touching it are cancelled, every domain on it is gone.
    pub fn power_off(&self, node: &str) -> Vec<String> {
        self.cancel_migrations_touching(node);
        let hv = self.mem.node(node);
        let mut killed = Vec::new();
        for vm in &self.vms {
            if self
                .mem
                .domain(node, vm)
                .is_some_and(|d| d.state.is_active())
            {
                let _ = hv.destroy(vm, 1_000);
                killed.push(vm.clone());
            }
        }
        self.set_daemon(node, Daemon::Down);
        self.ctl().faults.remove(node);
        killed
    }

    /// The node boots: an empty hypervisor with its daemon up.
    pub fn power_on(&self, node: &str) {
        self.set_daemon(node, Daemon::Up);
    }

    pub fn isolate(&self, node: &str) {
        self.ctl().isolated.insert(node.to_owned());
        self.cancel_migrations_touching(node);
    }

    pub fn reconnect(&self, node: &str) {
        self.ctl().isolated.remove(node);
    }

    pub fn is_isolated(&self, node: &str) -> bool {
        self.ctl().isolated.contains(node)
    }
}

/// One node's hypervisor with daemon health, faults and isolation applied before `MemHypervisor`.
#[derive(Clone)]
pub struct SimHv {
    inner: MemHypervisor,
    node: String,
    ctl: Arc<Mutex<Ctl>>,
    clock: SimClock,
}

enum Gate {
    Go,
    EffectThenHang,
    EffectThenError(String),
}

impl SimHv {
    pub fn node(&self) -> &str {
        &self.node
    }

    fn gate(&self, op: Op, timeout_ms: u64) -> Result<Gate, HvError> {
        let (daemon, fault) = {
            let mut ctl = self.ctl.lock().unwrap_or_else(|p| p.into_inner());
            let daemon = ctl.daemons.get(&self.node).copied().unwrap_or_default();
            let fault = ctl.faults.get_mut(&self.node).and_then(|q| {
                let i = q.iter().position(|(o, _)| *o == op)?;
                Some(q.remove(i).1)
            });
            (daemon, fault)
        };
        let timeout = HvError::Timeout {
            op,
            uri: self.uri(),
            timeout_ms,
        };
        let down = |message: &str| HvError::Unavailable {
            op,
            uri: self.uri(),
            message: message.to_owned(),
        };
        match daemon {
            Daemon::Down => return Err(down("daemon not running")),
            Daemon::Hung => {
                self.clock.sleep_ms(timeout_ms);
                return Err(timeout);
            }
            Daemon::Up => {}
        }
        match fault {
            None => Ok(Gate::Go),
            Some(Fault::Error(message)) => Err(HvError::Failed {
                op,
                name: String::new(),
                message,
            }),
            Some(Fault::Hang) => {
                self.clock.sleep_ms(timeout_ms);
                Err(timeout)
            }
            Some(Fault::HangAfterEffect) => Ok(Gate::EffectThenHang),
            Some(Fault::ErrorAfterEffect(message)) => Ok(Gate::EffectThenError(message)),
            Some(Fault::Down) => Err(down("connection refused")),
        }
    }

    fn finish<T>(
        &self,
        gate: Gate,
        op: Op,
        timeout_ms: u64,
        r: Result<T, HvError>,
    ) -> Result<T, HvError> {
        match gate {
            Gate::Go => r,
            Gate::EffectThenError(message) => Err(HvError::Failed {
                op,
                name: String::new(),
                message,
            }),
            Gate::EffectThenHang => {
                self.clock.sleep_ms(timeout_ms);
                Err(HvError::Timeout {
                    op,
                    uri: self.uri(),
                    timeout_ms,
                })
            }
        }
    }
}

impl Hypervisor for SimHv {
    fn uri(&self) -> String {
        format!("sim://{}", self.node)
    }

    fn state(&self, name: &str, timeout_ms: u64) -> Result<DomainState, HvError> {
        let g = self.gate(Op::State, timeout_ms)?;
        let r = self.inner.state(name, timeout_ms);
        self.finish(g, Op::State, timeout_ms, r)
    }

    fn create(&self, xml: &str, timeout_ms: u64) -> Result<(), HvError> {
        let g = self.gate(Op::Create, timeout_ms)?;
        let r = self.inner.create(xml, timeout_ms);
        self.finish(g, Op::Create, timeout_ms, r)
    }

    fn shutdown(&self, name: &str, modes: &ShutdownModes, timeout_ms: u64) -> Result<(), HvError> {
        let g = self.gate(Op::Shutdown, timeout_ms)?;
        let r = self.inner.shutdown(name, modes, timeout_ms);
        self.finish(g, Op::Shutdown, timeout_ms, r)
    }

    fn destroy(&self, name: &str, timeout_ms: u64) -> Result<(), HvError> {
        let g = self.gate(Op::Destroy, timeout_ms)?;
        let r = self.inner.destroy(name, timeout_ms);
        self.finish(g, Op::Destroy, timeout_ms, r)
    }

    fn resume(&self, name: &str, timeout_ms: u64) -> Result<(), HvError> {
        let g = self.gate(Op::Resume, timeout_ms)?;
        let r = self.inner.resume(name, timeout_ms);
        self.finish(g, Op::Resume, timeout_ms, r)
    }

    fn info(&self, name: &str, timeout_ms: u64) -> Result<DomainInfo, HvError> {
        let g = self.gate(Op::Info, timeout_ms)?;
        let r = self.inner.info(name, timeout_ms);
        self.finish(g, Op::Info, timeout_ms, r)
    }

    fn migrate(&self, name: &str, req: &MigrateRequest, timeout_ms: u64) -> Result<(), HvError> {
        let g = self.gate(Op::Migrate, timeout_ms)?;
        let blocked = {
            let ctl = self.ctl.lock().unwrap_or_else(|p| p.into_inner());
            let target_down = ctl.daemons.get(&req.target_uri) == Some(&Daemon::Down);
            let cut = ctl.isolated.contains(&self.node) || ctl.isolated.contains(&req.target_uri);
            target_down || cut
        };
        if blocked {
            return Err(HvError::Failed {
                op: Op::Migrate,
                name: name.to_owned(),
                message: format!(
                    "cannot connect to the target hypervisor on {}",
                    req.target_uri
                ),
            });
        }
        let r = self.inner.migrate(name, req, timeout_ms);
        self.finish(g, Op::Migrate, timeout_ms, r)
    }

    fn abort_job(&self, name: &str, timeout_ms: u64) -> Result<(), HvError> {
        let g = self.gate(Op::AbortJob, timeout_ms)?;
        let r = self.inner.abort_job(name, timeout_ms);
        self.finish(g, Op::AbortJob, timeout_ms, r)
    }

    fn job_info(&self, name: &str, timeout_ms: u64) -> Result<JobInfo, HvError> {
        let g = self.gate(Op::JobInfo, timeout_ms)?;
        let r = self.inner.job_info(name, timeout_ms);
        self.finish(g, Op::JobInfo, timeout_ms, r)
    }

    fn ensure_pool(&self, pool: &str, timeout_ms: u64) -> Result<bool, HvError> {
        let g = self.gate(Op::Pool, timeout_ms)?;
        let r = self.inner.ensure_pool(pool, timeout_ms);
        self.finish(g, Op::Pool, timeout_ms, r)
    }

    fn ensure_network(&self, network: &str, timeout_ms: u64) -> Result<bool, HvError> {
        let g = self.gate(Op::Network, timeout_ms)?;
        let r = self.inner.ensure_network(network, timeout_ms);
        self.finish(g, Op::Network, timeout_ms, r)
    }

    fn saved_xml(&self, name: &str, timeout_ms: u64) -> Result<String, HvError> {
        let g = self.gate(Op::Xml, timeout_ms)?;
        let r = self.inner.saved_xml(name, timeout_ms);
        self.finish(g, Op::Xml, timeout_ms, r)
    }

    fn emulator_processes(&self, name: &str) -> ProcessCheck {
        self.inner.emulator_processes(name)
    }

    /// As the real agent's: the node's own process table, whatever its daemon does.
    fn kill_emulator(&self, name: &str, timeout_ms: u64) -> Result<String, KillRefused> {
        self.inner.kill_emulator(name, timeout_ms)
    }
}

/// Another node's hypervisor as an agent reaches it over the network (the migration's other
/// side): every call fails as unreachable while either end is cut off.
#[derive(Clone)]
pub struct RemoteHv {
    pub hv: SimHv,
    pub from: String,
}

impl RemoteHv {
    fn cut(&self, op: Op) -> Result<(), HvError> {
        let ctl = self.hv.ctl.lock().unwrap_or_else(|p| p.into_inner());
        if ctl.isolated.contains(&self.from) || ctl.isolated.contains(&self.hv.node) {
            return Err(HvError::Unavailable {
                op,
                uri: self.hv.uri(),
                message: "no route to host".into(),
            });
        }
        Ok(())
    }
}

impl Hypervisor for RemoteHv {
    fn uri(&self) -> String {
        self.hv.uri()
    }
    fn state(&self, name: &str, timeout_ms: u64) -> Result<DomainState, HvError> {
        self.cut(Op::State)?;
        self.hv.state(name, timeout_ms)
    }
    fn create(&self, xml: &str, timeout_ms: u64) -> Result<(), HvError> {
        self.cut(Op::Create)?;
        self.hv.create(xml, timeout_ms)
    }
    fn shutdown(&self, name: &str, modes: &ShutdownModes, timeout_ms: u64) -> Result<(), HvError> {
        self.cut(Op::Shutdown)?;
        self.hv.shutdown(name, modes, timeout_ms)
    }
    fn destroy(&self, name: &str, timeout_ms: u64) -> Result<(), HvError> {
        self.cut(Op::Destroy)?;
        self.hv.destroy(name, timeout_ms)
    }
    fn resume(&self, name: &str, timeout_ms: u64) -> Result<(), HvError> {
        self.cut(Op::Resume)?;
        self.hv.resume(name, timeout_ms)
    }
    fn info(&self, name: &str, timeout_ms: u64) -> Result<DomainInfo, HvError> {
        self.cut(Op::Info)?;
        self.hv.info(name, timeout_ms)
    }
    fn migrate(&self, name: &str, req: &MigrateRequest, timeout_ms: u64) -> Result<(), HvError> {
        self.cut(Op::Migrate)?;
        self.hv.migrate(name, req, timeout_ms)
    }
    fn abort_job(&self, name: &str, timeout_ms: u64) -> Result<(), HvError> {
        self.cut(Op::AbortJob)?;
        self.hv.abort_job(name, timeout_ms)
    }
    fn job_info(&self, name: &str, timeout_ms: u64) -> Result<JobInfo, HvError> {
        self.cut(Op::JobInfo)?;
        self.hv.job_info(name, timeout_ms)
    }
    fn ensure_pool(&self, pool: &str, timeout_ms: u64) -> Result<bool, HvError> {
        self.cut(Op::Pool)?;
        self.hv.ensure_pool(pool, timeout_ms)
    }
    fn ensure_network(&self, network: &str, timeout_ms: u64) -> Result<bool, HvError> {
        self.cut(Op::Network)?;
        self.hv.ensure_network(network, timeout_ms)
    }
    fn emulator_processes(&self, name: &str) -> ProcessCheck {
        if self.cut(Op::State).is_err() {
            return ProcessCheck::Unknown("no route to host".into());
        }
        self.hv.emulator_processes(name)
    }
}
