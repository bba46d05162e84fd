//! The hypervisor a stop must not connect to: `hypervisor` was refused (a URI part outside the safe
//! set, such as an `ext` transport that would run a command) or is not valid UTF-8. Every daemon
//! call answers "unavailable" without connecting anywhere, so `stop` falls back to what it does with
//! libvirtd down: success only when no QEMU process for the domain exists on this host, looked up
//! in `/proc` (through the default hypervisor's process check, which never connects either), and
//! only when the refused URI names a local QEMU hypervisor; otherwise the state stays unknown.

use crate::hypervisor::{
    DomainInfo, DomainState, HvError, Hypervisor, JobInfo, MigrateRequest, Op, ProcessCheck,
    ShutdownModes,
};

/// A hypervisor known only by a URI the agent refuses to open.
pub struct Unreachable {
    /// The refused URI, as text (lossy for non-UTF-8), for messages and the locality test.
    uri: String,
    why: String,
    /// Only [`Hypervisor::emulator_processes`] is ever called on it.
    processes: Box<dyn Hypervisor>,
}

impl Unreachable {
    /// `processes` answers the `/proc` question for this host (normally the default URI's
    /// hypervisor, which is opened lazily and never connected by that call).
    pub fn new(uri: &str, why: &str, processes: Box<dyn Hypervisor>) -> Self {
        Self {
            uri: uri.to_owned(),
            why: why.to_owned(),
            processes,
        }
    }

    /// Whether the refused URI still plainly names this host's QEMU driver: scheme `qemu` or
    /// `qemu+unix`, no host (or `localhost`). Only then is `/proc` evidence about its domains.
    fn names_local_qemu(&self) -> bool {
        let Some((scheme, rest)) = self.uri.split_once("://") else {
            return false;
        };
        let host = rest.split(['/', '?']).next().unwrap_or_default();
        matches!(scheme, "qemu" | "qemu+unix") && (host.is_empty() || host == "localhost")
    }

    fn refuse<T>(&self, op: Op) -> Result<T, HvError> {
        Err(HvError::Unavailable {
            op,
            uri: self.uri.clone(),
            message: format!("not connected: {}", self.why),
        })
    }
}

impl Hypervisor for Unreachable {
    fn uri(&self) -> String {
        self.uri.clone()
    }
    fn state(&self, _name: &str, _timeout_ms: u64) -> Result<DomainState, HvError> {
        self.refuse(Op::State)
    }
    fn create(&self, _xml: &str, _timeout_ms: u64) -> Result<(), HvError> {
        self.refuse(Op::Create)
    }
    fn shutdown(&self, _n: &str, _m: &ShutdownModes, _t: u64) -> Result<(), HvError> {
        self.refuse(Op::Shutdown)
    }
    fn destroy(&self, _name: &str, _timeout_ms: u64) -> Result<(), HvError> {
        self.refuse(Op::Destroy)
    }
    fn info(&self, _name: &str, _timeout_ms: u64) -> Result<DomainInfo, HvError> {
        self.refuse(Op::Info)
    }
    fn migrate(&self, _n: &str, _r: &MigrateRequest, _t: u64) -> Result<(), HvError> {
        self.refuse(Op::Migrate)
    }
    fn abort_job(&self, _name: &str, _timeout_ms: u64) -> Result<(), HvError> {
        self.refuse(Op::AbortJob)
    }
    fn resume(&self, _name: &str, _timeout_ms: u64) -> Result<(), HvError> {
        self.refuse(Op::Resume)
    }
    fn job_info(&self, _name: &str, _timeout_ms: u64) -> Result<JobInfo, HvError> {
        self.refuse(Op::JobInfo)
    }
    fn emulator_processes(&self, name: &str) -> ProcessCheck {
        if self.names_local_qemu() {
            self.processes.emulator_processes(name)
        } else {
            ProcessCheck::Unknown(format!(
                "{} ({}) is not known to run domains as local QEMU processes",
                self.uri, self.why
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::ManualClock;
    use crate::mem::{MemDomain, MemWorld};

    #[test]
    fn never_connects_and_trusts_proc_only_for_local_qemu() {
        let world = MemWorld::new(Arc::new(ManualClock::new(0)));
        world.put_domain("n1", "vm1", MemDomain::running("<domain/>"));
        let local = Unreachable::new(
            "qemu+ext:///system?command=/x",
            "ext",
            Box::new(world.node("n1")),
        );
        assert!(matches!(
            local.state("vm1", 1000),
            Err(HvError::Unavailable { .. })
        ));
        assert!(local.destroy("vm1", 1000).is_err());
        assert_eq!(world.running_on("vm1"), vec!["n1".to_owned()], "untouched");
        // `ext` is not `unix`: a command may reach any daemon, so /proc proves nothing.
        assert!(matches!(
            local.emulator_processes("vm1"),
            ProcessCheck::Unknown(_)
        ));
        let plain = Unreachable::new("qemu:///system#x", "fragment", Box::new(world.node("n1")));
        assert!(matches!(
            plain.emulator_processes("vm1"),
            ProcessCheck::Present(_)
        ));
        assert_eq!(plain.emulator_processes("vm2"), ProcessCheck::Absent);
        let remote = Unreachable::new("qemu+ssh://h/system", "x", Box::new(world.node("n1")));
        assert!(matches!(
            remote.emulator_processes("vm2"),
            ProcessCheck::Unknown(_)
        ));
    }
}
