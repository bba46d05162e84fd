//! One node's executor: runs one resource operation with the agent's own action functions
//! (`highlander_agent::actions`) against that node's hypervisor, inside the operation's timeout,
//! as pacemaker-execd runs the agent binary. The agent's per-resource lock and start record live
//! in files (`lib.rs`); the simulator calls the actions below that layer, so they are not run here.
//!
//! `migrate_to` and `migrate_from` are the agent's own (`highlander_agent::migrate`, issue 4); the
//! other side of the migration is reached through [`RemoteHv`] (cut off by an isolation). The
//! agent's journal file is not written (a no-op journal), like the lock and start record.

use highlander_agent::Outcome;
use highlander_agent::actions::{self, Ctx, MonitorOpts, StopPlan};
use highlander_agent::clock::Deadline;
use highlander_agent::config::margin_ms;
use highlander_agent::hypervisor::{Hypervisor, MigrateRequest, ShutdownModes};
use highlander_agent::log::Log;
use highlander_agent::migrate;
use ocf_metadata::{CheckLevel, OcfExitCode};

use super::kernel::SimClock;
use super::world::{RemoteHv, SimHv, domain_xml};

/// What the executor is asked to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpKind {
    Start,
    Stop,
    /// A probe (interval 0) or one run of a recurring monitor.
    Monitor,
    MigrateTo {
        target: String,
    },
    MigrateFrom {
        source: String,
    },
}

impl OpKind {
    pub fn task(&self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::Stop => "stop",
            Self::Monitor => "monitor",
            Self::MigrateTo { .. } => "migrate_to",
            Self::MigrateFrom { .. } => "migrate_from",
        }
    }
}

/// Runs one operation to its end (on a kernel task).
pub fn run(
    hv: SimHv,
    remote: Option<RemoteHv>,
    clock: SimClock,
    vm: &str,
    op: &OpKind,
    timeout_ms: u64,
) -> Outcome {
    let log = Log::memory();
    let ctx = Ctx {
        hv: &hv,
        clock: &clock,
        log: &log,
    };
    let budget_ms = timeout_ms.saturating_sub(margin_ms(timeout_ms));
    let deadline = Deadline::after(&clock, budget_ms);
    match op {
        OpKind::Start => actions::start(&ctx, vm, &domain_xml(vm), &[], deadline),
        OpKind::Stop => {
            let plan = StopPlan {
                force: false,
                modes: ShutdownModes::default(),
                budget_ms,
            };
            actions::stop(&ctx, &[vm.to_owned()], &plan, deadline)
        }
        OpKind::Monitor => {
            let opts = MonitorOpts {
                level: CheckLevel::Basic,
                status_only: false,
                scripts: &[],
            };
            actions::monitor(&ctx, vm, opts, deadline)
        }
        OpKind::MigrateTo { target } => match remote {
            Some(r) => {
                let req = MigrateRequest {
                    target_uri: target.clone(),
                    ..MigrateRequest::default()
                };
                migrate::migrate_to(&ctx, &r, vm, &req, budget_ms, deadline, &|_, _| {})
            }
            None => Outcome::fail(OcfExitCode::ErrGeneric, "no target hypervisor"),
        },
        OpKind::MigrateFrom { .. } => {
            let source = remote.as_ref().map(|r| r as &dyn Hypervisor);
            migrate::migrate_from(&ctx, source, vm, deadline)
        }
    }
}
