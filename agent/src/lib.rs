//! highlander-agent: the `VirtualDomain` OCF resource agent for libvirt domains, as a library.
//!
//! The binary (`src/bin/VirtualDomain.rs`) only reads the environment, calls [`run`], prints and
//! exits; everything else is here so that tests and the simulator run the same logic. [`run_with`]
//! takes the clock, the log and the hypervisor factory, so tests run every action over
//! [`mem::MemHypervisor`].
//!
//! Dispatch (this file): the action name, the parameters ([`config`]), the per-resource lock and
//! the start record ([`lock`]), then the action ([`actions`], [`migrate`]).

pub mod actions;
pub mod clock;
pub mod command;
pub mod config;
pub mod hypervisor;
pub mod journal;
pub mod libvirt;
pub mod lock;
pub mod log;
pub mod mem;
pub mod migrate;
pub mod migration;
pub mod overlay;
pub mod params;
pub mod procscan;
pub mod qemukill;
pub mod saveconf;
pub mod scripts;
pub mod snapshot;
pub mod startres;
pub mod unreachable;
pub mod urisafe;
pub mod utilization;

use std::path::PathBuf;

use ocf_metadata::{Action, CheckLevel, EnvReading, MetadataProfile, OcfEnv, OcfExitCode};

use crate::actions::{Ctx, MonitorOpts, StopPlan};
use crate::clock::{Clock, Deadline, SystemClock};
use crate::config::{Config, ConfigError, RawConfig};
use crate::hypervisor::{Hypervisor, ShutdownModes};
use crate::log::Log;

/// What one invocation produced: the exit code, stdout, and an exit reason for stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub code: OcfExitCode,
    pub stdout: String,
    pub reason: Option<String>,
}

impl Outcome {
    /// A failure (or any code) with its exit reason.
    pub fn fail(code: OcfExitCode, reason: impl Into<String>) -> Self {
        Self {
            code,
            stdout: String::new(),
            reason: Some(reason.into()),
        }
    }
    pub fn success() -> Self {
        Self::code_only(OcfExitCode::Success)
    }
    /// A code without a reason (success, not running).
    pub fn code_only(code: OcfExitCode) -> Self {
        Self {
            code,
            stdout: String::new(),
            reason: None,
        }
    }
}

/// Opens the hypervisor at a URI (`None`: libvirt's default).
pub type Connector<'a> = &'a dyn Fn(Option<&str>) -> Box<dyn Hypervisor>;

/// The agent's surroundings: injected so tests use a manual clock and in-memory hypervisors.
pub struct Deps<'a> {
    pub clock: &'a dyn Clock,
    pub log: &'a Log,
    pub connect: Connector<'a>,
    /// Where utilization attributes are written; `None` writes none (no cluster, or a test).
    pub cib: Option<&'a dyn utilization::Cib>,
}

/// `usage` text.
pub const USAGE: &str = "usage: VirtualDomain {start|stop|monitor|status|validate-all|reload-agent|migrate_to|migrate_from|meta-data|usage}\n\
Parameters come from OCF_RESKEY_* variables; see meta-data.\n";

/// The answer to actions that need no hypervisor, clock or state (`meta-data`, `usage`, unknown
/// and unsupported actions); `None` for the others. References nothing of libvirt, so a binary
/// that only calls this does not load it.
pub fn run_static(action_name: &str, env: &OcfEnv) -> Option<Outcome> {
    let action: Action = match action_name.parse() {
        Ok(a) => a,
        Err(e) => return Some(Outcome::fail(OcfExitCode::ErrUnimplemented, e.to_string())),
    };
    match action {
        Action::MetaData => Some(metadata(env)),
        Action::Usage => Some(Outcome {
            code: OcfExitCode::Success,
            stdout: USAGE.to_owned(),
            reason: None,
        }),
        Action::Start
        | Action::MigrateTo
        | Action::MigrateFrom
        | Action::Stop
        | Action::Monitor
        | Action::Status
        | Action::ValidateAll
        | Action::ReloadAgent => None,
        _ => Some(Outcome::fail(
            OcfExitCode::ErrUnimplemented,
            format!("action {action} is not supported by this agent"),
        )),
    }
}

/// Runs one action named on the command line, on the real clock and libvirt, logging to stderr.
pub fn run(action_name: &str, env: &OcfEnv) -> Outcome {
    run_reading(action_name, &EnvReading::clean(env.clone()))
}

/// [`run`] on a leniently read environment: variables that could not be read refuse every action
/// but `stop` (6, naming them); `stop` does what it can without them (see [`salvage_for_stop`]).
pub fn run_reading(action_name: &str, reading: &EnvReading) -> Outcome {
    let env = &reading.env;
    // meta-data is static: no clock, no libvirt, no forks.
    if let Some(outcome) = run_static(action_name, env) {
        return outcome;
    }
    let clock = SystemClock::new();
    let log = Log::stderr(
        env.instance.as_deref().unwrap_or("VirtualDomain"),
        env.debug,
    );
    let connect =
        |uri: Option<&str>| -> Box<dyn Hypervisor> { Box::new(libvirt::Libvirt::new(uri)) };
    // Utilization goes to the CIB only when there is one: Pacemaker (and crm_resource) pass
    // `crm_feature_set` to the agents they run; a test names a CIB file. ocf-tester does neither.
    let crm_resource = utilization::CrmResource::default();
    let in_cluster = env.crm_feature_set.is_some()
        || std::env::var_os("CIB_file").is_some_and(|f| !f.is_empty());
    run_reading_with(
        action_name,
        reading,
        &Deps {
            clock: &clock,
            log: &log,
            connect: &connect,
            cib: in_cluster.then_some(&crm_resource as &dyn utilization::Cib),
        },
    )
}

fn metadata(env: &OcfEnv) -> Outcome {
    let profile = if env.caller_speaks_ocf_1_1() {
        MetadataProfile::Ocf11
    } else {
        MetadataProfile::Portable
    };
    Outcome {
        code: OcfExitCode::Success,
        stdout: ocf_metadata::render_metadata(&params::VIRTUAL_DOMAIN, profile),
        reason: None,
    }
}

/// Runs one action with the given clock, log and hypervisor factory.
pub fn run_with(action_name: &str, env: &OcfEnv, deps: &Deps) -> Outcome {
    run_reading_with(action_name, &EnvReading::clean(env.clone()), deps)
}

/// [`run_with`] on a leniently read environment (see [`run_reading`]).
pub fn run_reading_with(action_name: &str, reading: &EnvReading, deps: &Deps) -> Outcome {
    let env = &reading.env;
    if let Some(outcome) = run_static(action_name, env) {
        return outcome;
    }
    let Ok(action) = action_name.parse::<Action>() else {
        return Outcome::fail(OcfExitCode::ErrUnimplemented, "unknown action");
    };
    let mut raw = RawConfig::from_env(env, action);
    let mut salvage = StopSalvage::default();
    if !reading.faults.is_empty() {
        if action != Action::Stop {
            let reason = reading
                .faults
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("; ");
            deps.log.error(&format!("{action}: {reason}"));
            return Outcome::fail(OcfExitCode::ErrConfigured, reason);
        }
        salvage = salvage_for_stop(&mut raw, reading, deps.log);
    }
    let deadline = Deadline::after(deps.clock, raw.budget_ms);
    deps.log.debug(&format!(
        "{action}: timeout {} ms, own deadline after {} ms{}",
        raw.timeout_ms,
        raw.budget_ms,
        if raw.probe { " (probe)" } else { "" }
    ));
    if action == Action::Stop {
        return stop(raw, deps, deadline, salvage);
    }
    let cfg = match Config::validate(raw.clone()) {
        Ok(c) => c,
        Err(e) => return config_failure(action, deps, e),
    };
    if !cfg.unknown.is_empty() {
        deps.log.warn(&format!(
            "unknown parameter(s) ignored: {}",
            cfg.unknown.join(", ")
        ));
    }
    match action {
        Action::ValidateAll | Action::ReloadAgent => validate(&cfg, deps, deadline),
        Action::Start => start(&cfg, deps, deadline),
        Action::MigrateTo | Action::MigrateFrom => migrate(&cfg, deps, deadline),
        _ => monitor(&cfg, deps, deadline),
    }
}

/// The parameters are wrong: the same answer for every action but stop (which never gets here),
/// 6 for inherently wrong values, whatever the action.
fn config_failure(action: Action, deps: &Deps, e: ConfigError) -> Outcome {
    deps.log.error(&format!("{action}: {e}"));
    Outcome::fail(e.code(), e.to_string())
}

fn validate(cfg: &Config, deps: &Deps, deadline: Deadline) -> Outcome {
    let dom = match config::load_domain(&cfg.config_path) {
        Ok(d) => d,
        Err(e) => return Outcome::fail(e.code(), e.to_string()),
    };
    if cfg.raw.check_level >= CheckLevel::Local {
        let hv = (deps.connect)(cfg.hypervisor_uri.as_deref());
        let ctx = Ctx {
            hv: hv.as_ref(),
            clock: deps.clock,
            log: deps.log,
        };
        return actions::validate_local(&ctx, &dom.name, deadline);
    }
    if cfg.raw.action == Action::ReloadAgent {
        deps.log.info(
            "parameters reloaded: the agent keeps no state between invocations, so they apply from the next action on",
        );
    }
    Outcome::success()
}

fn start(cfg: &Config, deps: &Deps, deadline: Deadline) -> Outcome {
    let dom = match config::load_domain(&cfg.config_path) {
        Ok(d) => d,
        Err(e) => {
            deps.log.error(&e.to_string());
            return Outcome::fail(e.code(), e.to_string());
        }
    };
    let raw = &cfg.raw;
    let _lock = match lock::acquire(&raw.rsctmp, &raw.instance, deadline, deps.clock) {
        Ok(l) => l,
        Err(e) => return Outcome::fail(OcfExitCode::ErrGeneric, e.to_string()),
    };
    let hv = (deps.connect)(cfg.hypervisor_uri.as_deref());
    let ctx = Ctx {
        hv: hv.as_ref(),
        clock: deps.clock,
        log: deps.log,
    };
    // Recorded before the create, so that a stop after an interrupted start finds the domain
    // even if the config file changes or disappears.
    if let Err(e) = lock::write_record(&raw.rsctmp, &raw.instance, &dom.name) {
        deps.log
            .warn(&format!("cannot record the started domain: {e}"));
    }
    if let Err(reason) = before_start(cfg, &ctx, &dom, deadline) {
        deps.log.error(&reason);
        return Outcome::fail(OcfExitCode::ErrGeneric, reason);
    }
    let outcome = actions::start(&ctx, &dom.name, &dom.xml, &cfg.monitor_scripts, deadline);
    if outcome.code == OcfExitCode::Success {
        update_utilization(cfg, &dom.xml, deps, deadline);
    }
    outcome
}

/// What a start does before creating the domain, in heartbeat's order: restore from `snapshot`
/// (then nothing else), `start_resources`, the `backingfile` overlay (only while the domain is not
/// active here: a disk in use is never replaced).
fn before_start(
    cfg: &Config,
    ctx: &actions::Ctx,
    dom: &config::DomainDef,
    deadline: Deadline,
) -> Result<(), String> {
    if let Some(dir) = &cfg.snapshot {
        if snapshot::restore(ctx, &dom.name, dir, deadline)? == snapshot::Restore::Restored {
            return Ok(());
        }
    }
    if cfg.start_resources {
        startres::start_all(ctx, ctx.hv, &dom.xml, deadline)?;
    }
    if let Some(backing) = &cfg.backingfile {
        let budget = deadline.remaining_ms(ctx.clock) / 4;
        match ctx.hv.state(&dom.name, budget) {
            Ok(s) if s.is_active() => {
                ctx.log.info(&format!(
                    "domain {} is already {s}: its overlay is left as it is",
                    dom.name
                ));
            }
            Ok(_) => overlay::prepare(ctx, backing, cfg.stateless, &cfg.config_path, deadline)?,
            Err(e) => return Err(format!("cannot prepare the overlay: {e}")),
        }
    }
    Ok(())
}

/// Keeps the utilization attributes in line with the domain XML (`utilization.rs`): no CIB call
/// unless a value changed since this node last wrote it.
fn update_utilization(cfg: &Config, xml: &str, deps: &Deps, deadline: Deadline) {
    let Some(cib) = deps.cib else { return };
    let wanted = utilization::wanted(&cfg.utilization, utilization::sizes_from_xml(xml));
    if wanted.is_empty() {
        return;
    }
    let calls = utilization::update(
        cib,
        &cfg.raw.rsctmp,
        &cfg.raw.instance,
        &wanted,
        deadline,
        deps.clock,
        deps.log,
    );
    if calls > 0 {
        deps.log
            .debug(&format!("utilization: {calls} crm_resource call(s)"));
    }
}

fn monitor(cfg: &Config, deps: &Deps, deadline: Deadline) -> Outcome {
    let raw = &cfg.raw;
    let (name, xml) = match config::load_domain(&cfg.config_path) {
        Ok(d) => (d.name, Some(d.xml)),
        Err(e) => match lock::read_record(&raw.rsctmp, &raw.instance) {
            Ok(Some(name)) => {
                deps.log.warn(&format!(
                    "{e}; checking domain {name}, which this resource started here"
                ));
                (name, None)
            }
            _ if raw.probe => {
                // heartbeat's answer: nothing of this resource was started here (no record), and
                // this node cannot run it either; the start would give 5.
                deps.log.info(&format!(
                    "{e}; no domain was started here for {}: not running",
                    raw.instance
                ));
                return Outcome::code_only(OcfExitCode::NotRunning);
            }
            _ => return Outcome::fail(OcfExitCode::ErrGeneric, e.to_string()),
        },
    };
    let hv = (deps.connect)(cfg.hypervisor_uri.as_deref());
    let ctx = Ctx {
        hv: hv.as_ref(),
        clock: deps.clock,
        log: deps.log,
    };
    let opts = MonitorOpts {
        level: raw.check_level,
        status_only: raw.action == Action::Status,
        scripts: &cfg.monitor_scripts,
    };
    let outcome = actions::monitor(&ctx, &name, opts, deadline);
    // After the answer is known, and only for a domain running as `config` describes it.
    if outcome.code == OcfExitCode::Success && raw.action == Action::Monitor {
        if let Some(xml) = &xml {
            update_utilization(cfg, xml, deps, deadline);
            saveconf::save(&ctx, &name, &cfg.config_path, cfg.save_config, deadline);
        }
    }
    outcome
}

/// What a `stop` takes from variables that could not be read.
#[derive(Default)]
struct StopSalvage {
    /// Some variable could not be read: destroy at once, as with any invalid parameter.
    faulted: bool,
    /// `config` given as non-UTF-8 bytes: still a path.
    config_path: Option<PathBuf>,
    /// `hypervisor` given as non-UTF-8 bytes: never opened.
    hypervisor: Option<StopHypervisor>,
}

/// The timeout a stop assumes when `CRM_meta_timeout` is unreadable: Pacemaker's default operation
/// timeout, below the advertised 90 s, so that the agent answers before an executor that uses the
/// default would kill it.
pub const STOP_UNKNOWN_TIMEOUT_MS: u64 = 20_000;

/// Decides, per variable that could not be read, what a stop does without it (the table is in
/// docs/bad-input.md). A stop must succeed whenever the domain provably does not run here, so no
/// fault blocks it; each one only takes away what depended on it.
fn salvage_for_stop(raw: &mut RawConfig, reading: &EnvReading, log: &Log) -> StopSalvage {
    let mut salvage = StopSalvage {
        faulted: true,
        ..StopSalvage::default()
    };
    for fault in &reading.faults {
        let name = fault.name();
        let bytes = reading.raw.get(name);
        let lossy = bytes.map(|b| b.to_string_lossy().into_owned());
        let used = match (name, bytes, lossy) {
            ("OCF_RESKEY_config", Some(b), _) => {
                salvage.config_path = Some(PathBuf::from(b));
                "the path is used as bytes"
            }
            ("OCF_RESKEY_hypervisor", _, Some(l)) => {
                salvage.hypervisor = Some(StopHypervisor::Refused {
                    why: format!("{fault}"),
                    uri: l,
                });
                "not connected to"
            }
            ("OCF_RESOURCE_INSTANCE", _, Some(l)) => {
                // No start record can exist under it: every other action refused it.
                raw.instance = l;
                "the lock uses its lossy text"
            }
            ("HA_RSCTMP", Some(b), _) => {
                raw.rsctmp = PathBuf::from(b);
                "the path is used as bytes"
            }
            ("OCF_RESKEY_CRM_meta_timeout", _, _) => {
                raw.timeout_ms = STOP_UNKNOWN_TIMEOUT_MS;
                raw.budget_ms =
                    STOP_UNKNOWN_TIMEOUT_MS - config::margin_ms(STOP_UNKNOWN_TIMEOUT_MS);
                "assuming Pacemaker's default timeout of 20 s"
            }
            _ => "not needed by stop",
        };
        log.warn(&format!("{fault}: {used}; stopping by destroy"));
    }
    salvage
}

/// Which hypervisor a stop talks to.
enum StopHypervisor {
    /// A URI that passed its check (or `None`: libvirt's default).
    Connect(Option<String>),
    /// A URI the agent refuses to open; the stop relies on `/proc` ([`unreachable::Unreachable`]).
    Refused { uri: String, why: String },
}

impl StopHypervisor {
    /// `hypervisor` as given, checked as validation checks it (trimmed; empty is unset).
    fn from_raw(raw: &RawConfig) -> Self {
        match raw
            .hypervisor_uri()
            .map(str::trim)
            .filter(|u| !u.is_empty())
        {
            None => Self::Connect(None),
            Some(uri) => match urisafe::check_local_uri(uri) {
                Ok(()) => Self::Connect(Some(uri.to_owned())),
                Err(why) => Self::Refused {
                    uri: uri.to_owned(),
                    why: format!("hypervisor={uri:?} refused: {why}"),
                },
            },
        }
    }

    fn open(self, deps: &Deps) -> Box<dyn Hypervisor> {
        match self {
            Self::Connect(uri) => (deps.connect)(uri.as_deref()),
            Self::Refused { uri, why } => {
                deps.log.warn(&format!(
                    "{why}; not connecting to it: the domain counts as stopped only if no QEMU \
                     process of it exists on this host"
                ));
                Box::new(unreachable::Unreachable::new(
                    &uri,
                    &why,
                    (deps.connect)(None),
                ))
            }
        }
    }
}

/// stop needs only the domain name(s) and the URI: invalid parameters never make it fail (a failed
/// stop gets the node fenced); it then destroys rather than shuts down, and never connects to a
/// `hypervisor` URI that validation refuses.
fn stop(raw: RawConfig, deps: &Deps, deadline: Deadline, salvage: StopSalvage) -> Outcome {
    let log = deps.log;
    let (plan, hypervisor, save_config, snapshot_dir) = match Config::validate(raw.clone()) {
        Ok(c) => (
            StopPlan {
                force: c.force_stop || salvage.faulted,
                modes: c.shutdown_modes.clone(),
                budget_ms: raw.budget_ms,
            },
            StopHypervisor::Connect(c.hypervisor_uri.clone()),
            c.save_config,
            c.snapshot,
        ),
        Err(e) => {
            log.warn(&format!("{e}; stopping anyway, with destroy"));
            (
                StopPlan {
                    force: true,
                    modes: ShutdownModes::default(),
                    budget_ms: raw.budget_ms,
                },
                StopHypervisor::from_raw(&raw),
                saveconf::SaveConfig::Off,
                None,
            )
        }
    };
    let hypervisor = salvage.hypervisor.unwrap_or(hypervisor);
    let mut names = Vec::new();
    let config_path = raw.config_path().map(PathBuf::from).or(salvage.config_path);
    let mut save_to = None;
    match config_path {
        Some(path) => match config::load_domain(&path) {
            Ok(d) => {
                names.push(d.name);
                save_to = Some(path);
            }
            Err(e) => log.warn(&e.to_string()),
        },
        None => log.warn("config is not set"),
    }
    match lock::read_record(&raw.rsctmp, &raw.instance) {
        Ok(Some(n)) if !names.contains(&n) => names.push(n),
        Ok(_) => {}
        Err(e) => log.warn(&format!("cannot read the start record: {e}")),
    }
    if names.is_empty() {
        log.info(
            "no domain is known for this resource (config unusable, nothing started here): nothing to stop",
        );
        return Outcome::success();
    }
    let _lock = match lock::acquire(&raw.rsctmp, &raw.instance, deadline, deps.clock) {
        Ok(l) => Some(l),
        Err(e @ lock::StateError::Busy { .. }) => {
            return Outcome::fail(OcfExitCode::ErrGeneric, e.to_string());
        }
        Err(e) => {
            log.warn(&format!("{e}; stopping without the lock"));
            None
        }
    };
    let hv = hypervisor.open(deps);
    let ctx = Ctx {
        hv: hv.as_ref(),
        clock: deps.clock,
        log,
    };
    // heartbeat's point: before a graceful stop (a forced one does not wait for it).
    if let (Some(path), false) = (&save_to, plan.force) {
        saveconf::save(&ctx, &names[0], path, save_config, deadline);
        if let Some(dir) = &snapshot_dir {
            let graceful = (plan.budget_ms / 2).min(actions::DESTROY_RESERVE_CAP_MS);
            snapshot::save(&ctx, &names[0], dir, deadline.minus(graceful));
        }
    }
    let outcome = actions::stop(&ctx, &names, &plan, deadline);
    if outcome.code == OcfExitCode::Success {
        utilization::forget(&raw.rsctmp, &raw.instance);
        if let Err(e) = lock::remove_record(&raw.rsctmp, &raw.instance) {
            log.warn(&format!("cannot remove the start record: {e}"));
        }
    }
    outcome
}

/// migrate_to / migrate_from: serialized with start and stop, journaled, answered from both sides.
fn migrate(cfg: &Config, deps: &Deps, deadline: Deadline) -> Outcome {
    let raw = &cfg.raw;
    let log = deps.log;
    let to = raw.action == Action::MigrateTo;
    let (source, target) = (
        raw.migrate_source.clone().unwrap_or_default(),
        raw.migrate_target.clone().unwrap_or_default(),
    );
    let (peer_var, peer) = if to {
        ("CRM_meta_migrate_target", &target)
    } else {
        ("CRM_meta_migrate_source", &source)
    };
    if peer.is_empty() {
        return Outcome::fail(
            OcfExitCode::ErrGeneric,
            format!("{} needs OCF_RESKEY_{peer_var}", raw.action),
        );
    }
    // The peer's name goes into the remote URI (and `%n`): only a plain host name may.
    if let Err(why) = urisafe::check_node_name(peer) {
        return Outcome::fail(
            OcfExitCode::ErrConfigured,
            format!("OCF_RESKEY_{peer_var}={peer:?} refused: {why}"),
        );
    }
    let dom = match config::load_domain(&cfg.config_path) {
        Ok(d) => d,
        Err(e) => return Outcome::fail(e.code(), e.to_string()),
    };
    let _lock = match lock::acquire(&raw.rsctmp, &raw.instance, deadline, deps.clock) {
        Ok(l) => l,
        Err(e) => return Outcome::fail(OcfExitCode::ErrGeneric, e.to_string()),
    };
    let journal = |phase: &str, detail: &str| {
        let entry = journal::Entry {
            action: raw.action.as_str(),
            domain: &dom.name,
            source: &source,
            target: &target,
            phase,
            detail,
        };
        if let Err(e) = journal::append(&raw.rsctmp, &raw.instance, &entry) {
            log.warn(&format!("migration journal: {e}"));
        }
    };
    let local = (deps.connect)(cfg.hypervisor_uri.as_deref());
    let ctx = Ctx {
        hv: local.as_ref(),
        clock: deps.clock,
        log,
    };
    let outcome = if to {
        let req = match migration::request(
            &cfg.migration,
            cfg.hypervisor_uri.as_deref(),
            &raw.instance,
            &target,
        ) {
            Ok(r) => r,
            Err(e) => return Outcome::fail(OcfExitCode::ErrConfigured, e.to_string()),
        };
        let remote = (deps.connect)(Some(&req.target_uri));
        if cfg.start_resources {
            if let Err(reason) = startres::start_all(&ctx, remote.as_ref(), &dom.xml, deadline) {
                log.error(&reason);
                return Outcome::fail(OcfExitCode::ErrGeneric, reason);
            }
        }
        saveconf::save(&ctx, &dom.name, &cfg.config_path, cfg.save_config, deadline);
        migrate::migrate_to(
            &ctx,
            remote.as_ref(),
            &dom.name,
            &req,
            raw.budget_ms,
            deadline,
            &journal,
        )
    } else {
        let remote = migration::remote_uri(&cfg.migration, cfg.hypervisor_uri.as_deref(), &source)
            .ok()
            .map(|uri| (deps.connect)(Some(&uri)));
        let outcome = migrate::migrate_from(&ctx, remote.as_deref(), &dom.name, deadline);
        if outcome.code == OcfExitCode::Success {
            saveconf::save(&ctx, &dom.name, &cfg.config_path, cfg.save_config, deadline);
            if let Some(dir) = &cfg.snapshot {
                let why = format!("domain {} now runs here", dom.name);
                snapshot::discard_stale(&ctx, &dom.name, dir, &why);
            }
        }
        outcome
    };
    journal(
        "answer",
        &format!(
            "{} {}",
            outcome.code.code(),
            outcome.reason.as_deref().unwrap_or_default()
        ),
    );
    if outcome.code == OcfExitCode::Success {
        let r = if to {
            utilization::forget(&raw.rsctmp, &raw.instance);
            lock::remove_record(&raw.rsctmp, &raw.instance)
        } else {
            lock::write_record(&raw.rsctmp, &raw.instance, &dom.name)
        };
        if let Err(e) = r {
            log.warn(&format!("start record: {e}"));
        }
    }
    outcome
}
