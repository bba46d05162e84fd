//! The deterministic cluster simulator (ring 1 of the test suite): N nodes with in-memory
//! hypervisors, the agent's real actions, a Pacemaker-like controller planning with pengine, seeded
//! faults, and observing checkers. One seed reproduces a run exactly.
//!
//! Stages: [`options`] (the seed's draws) → [`cluster`] (event loop, controller, executors) with
//! [`faults`] → [`checkers`]; [`kernel`] owns virtual time, [`world`] the hypervisors, [`record`]
//! the CIB writes, [`planner`] the choice of planner, [`executor`] the agent calls.

pub mod checkers;
pub mod cluster;
pub mod executor;
pub mod faults;
pub mod kernel;
pub mod options;
pub mod oracle;
pub mod planner;
pub mod record;
pub mod rng;
pub mod world;

use cluster::{Ev, Script, Sim, Stats, Violation};
use options::{Options, PlannerKind, Profile};

/// What one seed produced.
#[derive(Debug, Clone)]
pub struct Report {
    pub options: Options,
    pub stats: Stats,
    pub virtual_ms: u64,
    pub violation: Option<Violation>,
    pub log: Vec<String>,
    /// pengine's view of the CIB at the violation (crm_simulate style), empty without one.
    pub status_at_violation: String,
    /// The first stall: a transition ended without an abort while the planner still had work
    /// (see `checkers::on_stall`); not a violation.
    pub stall: Option<String>,
    /// `--diff-crm-simulate`: the tally of the comparisons with crm_simulate.
    pub diff: Option<oracle::DiffTally>,
}

impl Report {
    /// The command that reproduces this run.
    pub fn reproduce(&self) -> String {
        let mut planner = match self.options.planner {
            PlannerKind::Pengine => String::new(),
            p => format!(" --planner {}", p.name()),
        };
        if self.options.profile != Profile::Atomic {
            planner.push_str(&format!(" --profile {}", self.options.profile.name()));
        }
        let what = if self.options.seed == 2013 && self.options.faults_max == 0 {
            "--scenario 2013".to_string()
        } else {
            format!("--seed {}", self.options.seed)
        };
        format!("cargo run --release -p test-cts --bin cts-sim -- {what}{planner} --verbose")
    }

    /// The failure text: seed, options, the log up to the violation, the command.
    pub fn render_failure(&self) -> String {
        let mut s = String::new();
        if let Some(v) = &self.violation {
            s.push_str(&format!(
                "VIOLATION seed={} checker={}: {}\n",
                self.options.seed, v.checker, v.message
            ));
            if let Some(g) = v.known_gap {
                s.push_str(&format!("  matches known planner gap: {g}\n"));
            }
        }
        s.push_str(&format!("{}\n", self.options));
        s.push_str("event log:\n");
        for l in &self.log {
            s.push_str(l);
            s.push('\n');
        }
        if !self.status_at_violation.is_empty() {
            s.push_str("pengine's view of the CIB at the violation (crm_simulate style):\n");
            s.push_str(&self.status_at_violation);
        }
        s.push_str(&format!("reproduce with: {}\n", self.reproduce()));
        s
    }
}

/// Runs one seed with its drawn options.
pub fn run_seed(seed: u64, planner: PlannerKind, profile: Profile) -> Report {
    run_seed_with(seed, planner, profile, &Extras::default())
}

/// What a run does beyond the seed's own draws (cts-sim's flags; the tests use none).
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// `--dump-cib DIR`: every CIB the DC plans from is written there (see `Sim::dump_dir`).
    pub dump_dir: Option<std::path::PathBuf>,
    /// `--crm-simulate`: a stall is checked with Pacemaker's scheduler (see [`oracle`]).
    pub crm_simulate: bool,
    /// `--diff-crm-simulate`: pengine's and crm_simulate's outputs compared on the planner's CIBs.
    pub diff_crm_simulate: Option<oracle::DiffConfig>,
}

/// [`run_seed`] with [`Extras`].
pub fn run_seed_with(seed: u64, planner: PlannerKind, profile: Profile, extras: &Extras) -> Report {
    run_options(
        Options::draw(seed, planner, profile),
        Vec::new(),
        None,
        extras,
    )
}

/// The 2013 scenario (Andreas Hofmeister's thread): vm1 runs on node1; a constraint moves it to
/// node2; the constraint is removed one second after migrate_to starts (the migration takes three);
/// then the cluster must settle with vm1 running once.
pub fn run_scenario_2013(planner: PlannerKind, profile: Profile) -> Report {
    let opts = Options::scenario_2013(planner, profile);
    let script = vec![(
        30_000,
        Ev::Script(Script::AddPrefer {
            vm: "vm1".into(),
            node: 1,
        }),
    )];
    run_options(
        opts,
        script,
        Some(("vm1".into(), "cli-prefer-vm1".into(), 1_000)),
        &Extras::default(),
    )
}

fn run_options(
    opts: Options,
    script: Vec<(u64, Ev)>,
    remove_on_migrate: Option<(String, String, u64)>,
    extras: &Extras,
) -> Report {
    let options = opts.clone();
    let mut sim = match Sim::new(opts) {
        Ok(s) => s,
        Err(e) => {
            return Report {
                options,
                stats: Stats::default(),
                virtual_ms: 0,
                violation: Some(Violation {
                    checker: "simulator",
                    message: e,
                    known_gap: None,
                }),
                log: Vec::new(),
                status_at_violation: String::new(),
                stall: None,
                diff: None,
            };
        }
    };
    let scripted = !script.is_empty();
    for (t, ev) in script {
        sim.at(t, ev);
    }
    if scripted {
        sim.at(120_000, Ev::Liveness);
    }
    sim.remove_on_migrate = remove_on_migrate;
    sim.dump_dir = extras.dump_dir.clone();
    sim.crm_simulate = extras.crm_simulate;
    sim.diff = extras
        .diff_crm_simulate
        .clone()
        .map(|c| (c, oracle::DiffTally::default()));
    sim.run();
    Report {
        options,
        stats: sim.stats.clone(),
        virtual_ms: sim.now_ms(),
        violation: sim.violation.clone(),
        log: std::mem::take(&mut sim.log),
        status_at_violation: std::mem::take(&mut sim.status_at_violation),
        stall: sim.first_stall.take(),
        diff: sim.diff.take().map(|(_, t)| t),
    }
}
