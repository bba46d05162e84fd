//! The options of one run, all drawn from its seed (swarm testing: each seed is a different mix of
//! cluster shape, limits and fault probabilities, so rare combinations come up across seeds).

use std::fmt;

use super::rng::Rng;

/// Which planner drives the controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlannerKind {
    /// pengine, as merged into this branch.
    Pengine,
    /// The control: Pacemaker 1.0's belief that a finished migrate_to stopped the VM.
    Pacemaker10,
}

impl PlannerKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Pengine => "pengine",
            Self::Pacemaker10 => "pacemaker-1.0",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pengine" => Some(Self::Pengine),
            "pacemaker-1.0" => Some(Self::Pacemaker10),
            _ => None,
        }
    }
}

/// What a run may do. `Atomic` (cts-sim's default) is the cluster as Highlander runs it: the VMs
/// are `ocf:highlander:VirtualDomain` in pengine's `atomic` migration model (that agent's
/// default), `allow-migrate` drawn by the seed. `Full` is the same with the VMs in the
/// `two-phase` model (Pacemaker's own reading of interrupted migrations, which the known-gap
/// labels were written for), and `NoMigrate` keeps every VM at `allow-migrate=false` in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Full,
    NoMigrate,
    Atomic,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::NoMigrate => "no-migrate",
            Self::Atomic => "atomic",
        }
    }
    /// The `migration-model` meta-attribute the VMs carry.
    pub fn migration_model(self) -> &'static str {
        match self {
            Self::Full | Self::NoMigrate => "two-phase",
            Self::Atomic => "atomic",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "full" => Some(Self::Full),
            "no-migrate" => Some(Self::NoMigrate),
            "atomic" => Some(Self::Atomic),
            _ => None,
        }
    }
}

/// The fault kinds; their weights are drawn per seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FaultKind {
    ActionFails,
    ActionHangs,
    AgentKilled,
    DaemonDown,
    DaemonHung,
    NodeCrash,
    NodeShutdown,
    ConstraintFlip,
    Isolation,
    GuestCrash,
    Evacuate,
}

impl FaultKind {
    pub const ALL: [FaultKind; 11] = [
        Self::ActionFails,
        Self::ActionHangs,
        Self::AgentKilled,
        Self::DaemonDown,
        Self::DaemonHung,
        Self::NodeCrash,
        Self::NodeShutdown,
        Self::ConstraintFlip,
        Self::Isolation,
        Self::GuestCrash,
        Self::Evacuate,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Self::ActionFails => "action-fails",
            Self::ActionHangs => "action-hangs",
            Self::AgentKilled => "agent-killed",
            Self::DaemonDown => "libvirtd-down",
            Self::DaemonHung => "libvirtd-hung",
            Self::NodeCrash => "node-crash",
            Self::NodeShutdown => "node-shutdown",
            Self::ConstraintFlip => "constraint-flip",
            Self::Isolation => "isolation",
            Self::GuestCrash => "guest-crash",
            Self::Evacuate => "evacuate",
        }
    }
}

/// Everything a run is shaped by.
#[derive(Debug, Clone)]
pub struct Options {
    pub seed: u64,
    pub planner: PlannerKind,
    pub profile: Profile,
    pub nodes: usize,
    pub vms: usize,
    pub batch_limit: usize,
    /// Migrations in flight per node; `None` is unlimited (Pacemaker's -1).
    pub migration_limit: Option<usize>,
    pub migration_threshold: u32,
    pub stickiness: i64,
    pub allow_migrate_per_mille: u64,
    pub migration_ms: u64,
    pub op_timeout_ms: u64,
    pub migrate_timeout_ms: u64,
    pub monitor_interval_ms: u64,
    /// Membership notices a lost node after this long (token timeout).
    pub detect_ms: u64,
    pub fence_delay_ms: u64,
    pub fence_fail_per_mille: u64,
    pub reboot_ms: u64,
    /// Mean time between faults.
    pub fault_gap_ms: u64,
    pub faults_max: usize,
    pub weights: Vec<(FaultKind, u64)>,
    /// Transitions allowed after healing before liveness fails.
    pub liveness_transitions_max: u64,
    pub liveness_ms_max: u64,
    /// `cluster-recheck-interval`: how long the DC stays idle (S_IDLE) before it runs the
    /// scheduler again without a reason. Pacemaker's controller plans only when something aborts
    /// the transition, or when this timer fires (default 15 min).
    pub recheck_interval_ms: u64,
}

fn pick<T: Copy>(rng: &mut Rng, xs: &[T]) -> T {
    xs[rng.index(xs.len())]
}

impl Options {
    /// Draws every option from the seed.
    pub fn draw(seed: u64, planner: PlannerKind, profile: Profile) -> Self {
        let mut rng = Rng::new(seed ^ 0x5EED_0F0F_7157_0001);
        let nodes = rng.range(3, 7) as usize;
        let vms = rng.range(1, (2 * nodes).min(10) as u64) as usize;
        let migration_ms = pick(&mut rng, &[200, 1_000, 3_000, 8_000]);
        let weights = FaultKind::ALL
            .iter()
            .map(|&k| {
                // A third of the kinds are off in any one run.
                let w = if rng.chance(333) {
                    0
                } else {
                    rng.range(1, 100)
                };
                (k, w)
            })
            .collect();
        let allow_migrate_per_mille = pick(&mut rng, &[1_000, 900, 500]);
        Options {
            seed,
            planner,
            profile,
            nodes,
            vms,
            batch_limit: pick(&mut rng, &[1, 2, 4, 8, 30]),
            migration_limit: pick(&mut rng, &[None, Some(1), Some(2)]),
            migration_threshold: pick(&mut rng, &[1_000_000, 1, 3]),
            stickiness: pick(&mut rng, &[0, 100]),
            allow_migrate_per_mille: match profile {
                Profile::Full | Profile::Atomic => allow_migrate_per_mille,
                Profile::NoMigrate => 0,
            },
            migration_ms,
            op_timeout_ms: pick(&mut rng, &[20_000, 60_000]),
            migrate_timeout_ms: pick(&mut rng, &[5_000, 20_000, 120_000]),
            monitor_interval_ms: pick(&mut rng, &[5_000, 10_000, 30_000]),
            detect_ms: rng.range(1_000, 5_000),
            fence_delay_ms: pick(&mut rng, &[500, 3_000, 30_000]),
            fence_fail_per_mille: pick(&mut rng, &[0, 0, 200, 600]),
            reboot_ms: rng.range(5_000, 60_000),
            fault_gap_ms: pick(&mut rng, &[500, 2_000, 8_000, 20_000]),
            faults_max: rng.range(3, 40) as usize,
            weights,
            liveness_transitions_max: 40,
            liveness_ms_max: 30 * 60_000,
            // Drawn last, so every earlier draw (and so each seed's cluster) stays as it was.
            recheck_interval_ms: pick(&mut rng, &[15 * 60_000, 5 * 60_000, 2 * 60_000]),
        }
    }

    /// The fixed shape of the 2013 scenario (the control runs it).
    pub fn scenario_2013(planner: PlannerKind, profile: Profile) -> Self {
        Options {
            seed: 2013,
            planner,
            profile,
            nodes: 3,
            vms: 1,
            batch_limit: 30,
            migration_limit: None,
            migration_threshold: 1_000_000,
            stickiness: 0,
            allow_migrate_per_mille: 1_000,
            migration_ms: 3_000,
            op_timeout_ms: 20_000,
            migrate_timeout_ms: 60_000,
            monitor_interval_ms: 10_000,
            detect_ms: 2_000,
            fence_delay_ms: 1_000,
            fence_fail_per_mille: 0,
            reboot_ms: 10_000,
            fault_gap_ms: 1_000,
            faults_max: 0,
            weights: FaultKind::ALL.iter().map(|&k| (k, 0)).collect(),
            liveness_transitions_max: 40,
            liveness_ms_max: 30 * 60_000,
            recheck_interval_ms: 15 * 60_000,
        }
    }
}

impl fmt::Display for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let limit = self
            .migration_limit
            .map(|l| l.to_string())
            .unwrap_or_else(|| "-1".into());
        writeln!(
            f,
            "SEED={} planner={} profile={} nodes={} vms={} batch-limit={} migration-limit={} migration-threshold={} stickiness={} allow-migrate={}‰",
            self.seed,
            self.planner.name(),
            self.profile.name(),
            self.nodes,
            self.vms,
            self.batch_limit,
            limit,
            self.migration_threshold,
            self.stickiness,
            self.allow_migrate_per_mille
        )?;
        writeln!(
            f,
            "  migration={}ms op-timeout={}ms migrate-timeout={}ms monitor={}ms detect={}ms fence-delay={}ms fence-fail={}‰ reboot={}ms recheck={}ms",
            self.migration_ms,
            self.op_timeout_ms,
            self.migrate_timeout_ms,
            self.monitor_interval_ms,
            self.detect_ms,
            self.fence_delay_ms,
            self.fence_fail_per_mille,
            self.reboot_ms,
            self.recheck_interval_ms
        )?;
        let w: Vec<String> = self
            .weights
            .iter()
            .filter(|(_, w)| *w > 0)
            .map(|(k, w)| format!("{}:{w}", k.name()))
            .collect();
        write!(
            f,
            "  faults<={} gap~{}ms weights: {}",
            self.faults_max,
            self.fault_gap_ms,
            if w.is_empty() {
                "none".into()
            } else {
                w.join(" ")
            }
        )
    }
}
