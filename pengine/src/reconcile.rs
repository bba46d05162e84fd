//! Observed x desired -> named sets per resource: keep, start, stop, migrate, move, recover, restart, probe, blocked.

use crate::observed::{Observed, Role};
use crate::one_or_more::{Member, Relaxed};
use crate::placement::Desired;

/// What happens to one resource, in Pacemaker's summary vocabulary.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub enum Change {
    Keep,
    Start {
        target: usize,
        blocked: Option<String>,
    },
    Stop {
        sources: Vec<usize>,
        reason: Option<String>,
        blocked: bool,
    },
    Move {
        source: usize,
        target: usize,
        stops: Vec<usize>,
    },
    Migrate {
        source: usize,
        target: usize,
    },
    Recover {
        source: usize,
        target: usize,
        stops: Vec<usize>,
    },
    Restart {
        node: usize,
        reason: Option<String>,
    },
}

/// The named sets, one entry per resource index.
#[derive(Debug, Clone, Default)]
pub struct Reconciliation {
    pub changes: Vec<Change>,
    /// Probes to run: (resource, node).
    pub probes: Vec<(usize, usize)>,
    /// Probes on a remote node fenced because its resources' state is unknown and its
    /// connection unrecoverable (`remote::fence_unrecoverable`): Pacemaker creates them before
    /// deciding that fencing, and they cannot run; DOT draws them, nothing orders them.
    pub drawn_probes: Vec<(usize, usize)>,
    /// Nodes to fence, in creation order, with the reason.
    pub fence: Vec<(usize, String)>,
    /// Guest nodes "fenced" by recovering their container, in creation order (see
    /// `guest::fencing`).
    pub guest_fence: Vec<crate::guest::GuestFence>,
    /// Required unfencings, in creation order (see `unfencing`).
    pub unfence: Vec<crate::unfencing::Unfence>,
    /// Nodes to shut down cleanly.
    pub shutdown: Vec<usize>,
    /// Why a resource that could migrate moves by stop and start instead (summary reason).
    pub move_reasons: std::collections::BTreeMap<usize, String>,
    /// Migrations whose start became unrunnable (an ordering's first cannot start), so the
    /// resource stops: (source, target). Pacemaker still creates their migrate_to and
    /// migrate_from, unrunnable, which DOT draws.
    pub unrunnable_migrations: std::collections::BTreeMap<usize, (usize, usize)>,
    /// Resources that would migrate but move by stop and start because a dangling migration
    /// leaves them a stop on another node (no summary reason; their migrate_to and
    /// migrate_from are drawn, unrunnable).
    pub dangling_moves: std::collections::BTreeSet<usize>,
    /// Groups whose start pseudo action cannot run: a mandatory ordering's first cannot.
    pub blocked_group_starts: std::collections::BTreeSet<usize>,
    /// Of those, the groups blocked by an asymmetrical ordering (symmetrical=false): their
    /// start is required as well as unrunnable, even when nothing in the group starts.
    pub asymmetric_blocked_group_starts: std::collections::BTreeSet<usize>,
    /// The one-or-more pseudo actions (see `crate::one_or_more`) and whether each is runnable.
    pub one_or_more: Vec<(Relaxed, bool)>,
    /// Clone instances placed where a mandatory interleaved ordering finds no instance of its
    /// first clone placed (`clones::interleaved`): Pacemaker unassigns them once their start
    /// exists, so the start stays (required, unrunnable) but the summary shows nothing.
    pub inhibited: std::collections::BTreeSet<usize>,
}

impl Reconciliation {
    /// One-line count per set, for logs.
    pub fn summary(&self) -> String {
        let mut counts = [0usize; 7];
        for c in &self.changes {
            let i = match c {
                Change::Keep => 0,
                Change::Start { .. } => 1,
                Change::Stop { .. } => 2,
                Change::Move { .. } => 3,
                Change::Migrate { .. } => 4,
                Change::Recover { .. } => 5,
                Change::Restart { .. } => 6,
            };
            counts[i] += 1;
        }
        format!(
            "keep={} start={} stop={} move={} migrate={} recover={} restart={} probe={} fence={}",
            counts[0],
            counts[1],
            counts[2],
            counts[3],
            counts[4],
            counts[5],
            counts[6],
            self.probes.len(),
            self.fence.len()
        )
    }
}

pub(crate) fn quorum_block(obs: &Observed, ri: usize) -> Option<String> {
    let r = &obs.resources[ri];
    if obs.have_quorum
        || r.meta
            .get("requires")
            .map(|v| v == "nothing")
            .unwrap_or(false)
    {
        return None;
    }
    match obs.no_quorum_policy {
        crate::observed::NoQuorum::Ignore => None,
        crate::observed::NoQuorum::Freeze => {
            if r.running_on.is_empty() {
                Some("quorum freeze".into())
            } else {
                None
            }
        }
        // An active promotable instance is demoted instead (`placement::promotable`).
        crate::observed::NoQuorum::Demote
            if matches!(r.role, Role::Promoted | Role::Unpromoted) =>
        {
            None
        }
        _ => Some("no quorum".into()),
    }
}

/// Whether a resource's start needs fencing (Pacemaker's `requires`): fencing devices and
/// clusters without fencing need only quorum by default; "nothing" and "quorum" never do.
pub fn needs_fencing(obs: &Observed, r: &crate::observed::Resource) -> bool {
    match r
        .meta
        .get("requires")
        .map(|v| v.to_ascii_lowercase())
        .as_deref()
    {
        Some("nothing" | "quorum") => false,
        Some("fencing") => true,
        // (a remote connection requires quorum by default)
        _ => {
            obs.stonith_enabled
                && !r.is_stonith()
                && !crate::remote::is_connection_agent(&r.class, r.provider.as_deref(), &r.kind)
        }
    }
}

/// Whether a resource's start requires nothing (Pacemaker's `requires`): set so, or by default
/// for a resource that is no fencing device when fencing is disabled and no-quorum-policy is
/// ignore.
pub(crate) fn start_requires_nothing(obs: &Observed, r: &crate::observed::Resource) -> bool {
    match r
        .meta
        .get("requires")
        .map(|v| v.to_ascii_lowercase())
        .as_deref()
    {
        Some("nothing") => true,
        Some("quorum" | "fencing" | "unfencing") => false,
        // (a remote connection requires quorum by default)
        _ => {
            !r.is_stonith()
                && !crate::remote::is_connection_agent(&r.class, r.provider.as_deref(), &r.kind)
                && !obs.stonith_enabled
                && obs.no_quorum_policy == crate::observed::NoQuorum::Ignore
        }
    }
}

/// What rules out probing resource `ri` on node `ni` wherever a probe is considered (the probes
/// here, the remote node's fencing for unknown state in `crate::remote`, the orderings of probes
/// a stopping guest skips in `crate::guest`): an orphan, a state already known there, a node
/// that never runs it (`remote::never_probed`), or a location's `resource-discovery`. Each
/// caller adds its own rules about containers, clones and guests.
pub fn probe_ruled_out(obs: &Observed, desired: &Desired, ri: usize, ni: usize) -> bool {
    let r = &obs.resources[ri];
    r.orphan
        || r.known_on.contains(&ni)
        || r.running_on.contains(&ni)
        || crate::remote::never_probed(obs, ri, ni)
        || desired
            .no_discovery
            .get(ri)
            .is_some_and(|s| s.contains(&ni))
}

/// Computes the change for every resource.
pub fn reconcile(obs: &Observed, desired: &Desired) -> Reconciliation {
    let mut rec = Reconciliation::default();
    for (ni, n) in obs.nodes.iter().enumerate() {
        // (A guest node is "fenced" by its container's recovery: see the end.)
        if crate::guest::is_guest(obs, ni) {
            continue;
        }
        if n.unclean && obs.can_fence(ni) {
            rec.fence.push((
                ni,
                n.fence_reason
                    .clone()
                    .unwrap_or_else(|| "node is unclean".into()),
            ));
        } else if n.online && n.shutdown && n.remote.is_none() {
            // Remote nodes are never sent a shutdown (see `crate::remote`).
            rec.shutdown.push(ni);
        }
    }
    // (fencing decided while scheduling comes after what unpacking decided)
    rec.fence.sort_by_key(|&(ni, _)| obs.nodes[ni].fence_phase);
    let probes_enabled = obs
        .option("enable-startup-probes")
        .map(crate::cib::is_true)
        .unwrap_or(true);
    if probes_enabled {
        for (ni, n) in obs.nodes.iter().enumerate() {
            // A pending node (online, not yet a member) is probed too: the probe cannot run
            // there (see `actions`).
            // (A bundle's guest node in maintenance, its bundle unmanaged, is probed.)
            // (the unrunnable probes on a remote node fenced for them: `drawn_probes`)
            let drawn = n.online && n.unclean && n.fence_phase == 2;
            if !n.online
                || (n.unclean && !drawn)
                || (n.maintenance && !crate::bundles::is_bundle_node(obs, ni))
            {
                continue;
            }
            for (ri, r) in obs.resources.iter().enumerate() {
                // A resource inside a container is never probed.
                // (A guest node's connection is, see `crate::guest`.)
                if probe_ruled_out(obs, desired, ri, ni)
                    || (r.container.is_some() && r.remote_node.is_none())
                    || crate::guest::never_probed(obs, &desired.assigned, ri, ni)
                    || crate::bundles::never_probed(obs, &desired.assigned, ri, ni)
                {
                    continue;
                }
                // An anonymous clone probes one instance per node.
                if let Some(gi) = crate::clone_groups::clone_of(obs, ri) {
                    if crate::clones::probed_instance(obs, &desired.assigned, gi, ni, ri)
                        != Some(ri)
                    {
                        continue;
                    }
                }
                if drawn {
                    rec.drawn_probes.push((ri, ni));
                } else {
                    rec.probes.push((ri, ni));
                }
            }
        }
    }
    for (ri, r) in obs.resources.iter().enumerate() {
        let next = desired.assigned[ri];
        let current = r.running_on.first().copied();
        if desired.unmanaged[ri] {
            rec.changes.push(Change::Keep);
            continue;
        }
        // A partial migration (migrate_to done, migrate_from not) continues when it still may
        // migrate to the same target; otherwise every copy stops (the arms below).
        let continues = r.partial_migration.is_some_and(|(s, t)| {
            r.running_on.len() == 2
                && next == Some(t)
                && r.allow_migrate()
                && r.managed
                && !r.failed
                && !r.migratable_cleared
                && !r.start_pending()
                && [s, t]
                    .iter()
                    .all(|&n| obs.nodes[n].online && !obs.nodes[n].unclean)
                && quorum_block(obs, ri).is_none()
        });
        // A resource that does not need fencing counts only its copies on clean nodes: one copy
        // there, staying, is not multiply active (fencing the unclean node stops the others).
        let lone_clean = r.running_on.len() > 1 && !r.failed && !needs_fencing(obs, r) && {
            let mut clean = r
                .running_on
                .iter()
                .copied()
                .filter(|&n| obs.nodes[n].online && !obs.nodes[n].unclean);
            let first = clean.next();
            first.is_some() && first == next && clean.next().is_none()
        };
        let change = match (r.running_on.len(), next) {
            _ if lone_clean => Change::Keep,
            _ if continues => {
                let (source, target) = r.partial_migration.unwrap_or_default();
                Change::Migrate { source, target }
            }
            (0, None) => Change::Keep,
            (0, Some(t)) => Change::Start {
                target: t,
                blocked: quorum_block(obs, ri),
            },
            (_, None) => Change::Stop {
                sources: r.running_on.clone(),
                reason: Some(
                    desired.unplaced_reason[ri]
                        .clone()
                        .unwrap_or_else(|| "node availability".into()),
                ),
                blocked: false,
            },
            (1, Some(t)) => {
                let s = current.unwrap_or(t);
                if let Some(q) = quorum_block(obs, ri) {
                    Change::Stop {
                        sources: vec![s],
                        reason: Some(q),
                        blocked: false,
                    }
                } else if s == t {
                    if r.role == Role::Stopped {
                        // Active only as a failed migrate_to's target (no node had it started):
                        // Pacemaker has nothing to stop, only the start, which it prints as a
                        // restart (migrate-fail-7).
                        Change::Recover {
                            source: s,
                            target: t,
                            stops: vec![],
                        }
                    } else if r.failed && !recovers_by_demotion(r) {
                        Change::Recover {
                            source: s,
                            target: t,
                            stops: vec![s],
                        }
                    } else if r.definition_restart.contains(&s) {
                        // The start's reason goes when the start requires nothing (Pacemaker
                        // clears it once the start has its node).
                        Change::Restart {
                            node: s,
                            reason: (!start_requires_nothing(obs, r))
                                .then(|| "resource definition change".into()),
                        }
                    } else if r.agent_changed_on.contains(&s) {
                        // The agent changed: the check requires the stop (no reason).
                        Change::Restart {
                            node: s,
                            reason: None,
                        }
                    } else if r.unpack_stops.contains(&s)
                        || (r.reload_on.contains(&s) && r.managed && r.start_pending())
                    {
                        // A stop required while unpacking (a filler's failure restarts its
                        // container), or a reload that cannot apply to a start still pending:
                        // the resource restarts where it is.
                        Change::Restart {
                            node: s,
                            reason: None,
                        }
                    } else {
                        Change::Keep
                    }
                } else if r.failed {
                    Change::Recover {
                        source: s,
                        target: t,
                        stops: vec![s],
                    }
                } else {
                    let migratable = r.allow_migrate()
                        && !r.migratable_cleared
                        // a partial migration that cannot continue forbids migrating
                        && r.partial_migration.is_none()
                        && !obs.nodes[s].unclean
                        && obs.nodes[s].online;
                    if migratable && !dangling_stop_elsewhere(r, s) {
                        Change::Migrate {
                            source: s,
                            target: t,
                        }
                    } else {
                        if migratable {
                            rec.dangling_moves.insert(ri);
                        }
                        Change::Move {
                            source: s,
                            target: t,
                            stops: vec![s],
                        }
                    }
                }
            }
            (_, Some(_))
                if r.meta
                    .get("multiple-active")
                    .map(|v| v == "stop_only")
                    .unwrap_or(false) =>
            {
                Change::Stop {
                    sources: r.running_on.clone(),
                    reason: Some("node availability".into()),
                    blocked: false,
                }
            }
            (_, Some(t)) => {
                let s = current.unwrap_or(t);
                if s == t {
                    Change::Recover {
                        source: s,
                        target: t,
                        stops: r.running_on.clone(),
                    }
                } else {
                    Change::Move {
                        source: s,
                        target: t,
                        stops: r.running_on.clone(),
                    }
                }
            }
        };
        rec.changes.push(change);
    }
    rec.guest_fence = crate::guest::fencing(obs, &rec.changes);
    rec
}

/// The state of a resource's start action while orderings are applied.
#[derive(Debug, Clone, Default)]
struct StartState {
    exists: bool,
    runnable: bool,
    required: bool,
    reason: Option<String>,
    /// The resource is unmanaged: its change stays Keep whatever the orderings say.
    unmanaged: bool,
    /// The resource is active and its change stops it (a stop, move, recovery, restart or
    /// migration) before any ordering applies.
    stopping: bool,
    /// The resource is active and stops: Pacemaker's restart ordering (its required stop
    /// implies its start) makes its unrunnable start required too.
    stop_implied: bool,
    /// A promotable clone's instance whose next role is Promoted on a node: whether it is
    /// already promoted there (its promote then only comes with a restart).
    promote: Option<bool>,
}

/// How a mandatory ordering acts on its then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Start then start, symmetrical: implies-then and runnable-left.
    Symmetric,
    /// Start then start, symmetrical=false: an unrunnable first blocks a then that moves.
    Asymmetric,
    /// As `Symmetric`, for a configured ordering whose first is a primitive's start: applied
    /// before that primitive's own restart ordering (Pacemaker's `rsc_order_first` creates
    /// the start it names, which the restart ordering then finds), so a first that stops has
    /// a start that is required as well as unrunnable.
    Configured,
    /// Stop then stop with implies-then: a required first stop requires the then's stop (an
    /// active then that stays restarts).
    Stop,
    /// A guest's container and what runs on the guest (`guest::implied_restarts`): a required
    /// first start requires the then's start, an unrunnable one makes it unrunnable (the
    /// then's own group and clone orderings aside).
    Implies,
}

/// One side of a mandatory ordering: a primitive's start, or a group's running/start.
#[derive(Debug, Clone, Copy)]
enum End {
    Start(usize),
    GroupRunning(usize),
    GroupStart(usize),
    /// A primitive's stop, as a first or a then.
    Stop(usize),
    /// A group's stop: its stopped pseudo action as a first, its members' stops as a then.
    GroupStop(usize),
    /// A one-or-more pseudo action (index into `crate::one_or_more::collect`), as a first.
    OneOrMore(usize),
    /// A promotable clone's promote, as a first (an ordering after it follows the clone's
    /// promoted, or its confirmed-post notification with `notify`: `action_for_ordering`).
    ClonePromote(usize),
}

/// An interleaved instance's stop as an ordering end.
fn stop_end(u: crate::clones::Instance) -> End {
    match u {
        crate::clones::Instance::Rsc(r) => End::Stop(r),
        crate::clones::Instance::Group(g) => End::GroupStop(g),
    }
}

/// Whether a resource's stop is required: it is active and stops (its change, or a start an
/// ordering made unrunnable or required).
fn stop_required(obs: &Observed, st: &[StartState], ri: usize) -> bool {
    let s = &st[ri];
    !obs.resources[ri].running_on.is_empty()
        && !s.unmanaged
        && (s.stopping || s.required || !s.runnable)
}

fn first_state(obs: &Observed, rx: &[Relaxed], st: &[StartState], e: End) -> (bool, bool, String) {
    match e {
        // Runnable once enough of its firsts are; never required.
        End::OneOrMore(k) => {
            let runnable = rx[k]
                .firsts
                .iter()
                .filter(|&&m| match m {
                    Member::Rsc(ri) => st[ri].exists && st[ri].runnable,
                    Member::Group(gi) => first_state(obs, rx, st, End::GroupStart(gi)).0,
                })
                .count();
            (runnable >= rx[k].min, false, rx[k].name.clone())
        }
        End::Start(ri) => (
            st[ri].runnable || !st[ri].exists,
            st[ri].required,
            format!("{} start", obs.resources[ri].id),
        ),
        End::GroupRunning(gi) | End::GroupStart(gi) => {
            let m = &obs.groups[gi].members;
            // A clone runs when one instance's start can (Pacemaker sums its instances'
            // flags) and is required when one instance's start is, runnable or not; a group
            // runs when every member can.
            let instances = obs.groups[gi]
                .clone
                .as_ref()
                .map(|c| c.instances.clone())
                .unwrap_or_default();
            let (runnable, required) = if !instances.is_empty() {
                // (a clone of groups: one instance group that can run)
                let of = |ig: usize| first_state(obs, rx, st, End::GroupRunning(ig));
                (
                    instances.iter().any(|&ig| of(ig).0),
                    instances.iter().any(|&ig| of(ig).1),
                )
            } else if obs.groups[gi].clone.is_some() {
                (
                    m.iter().any(|&ri| st[ri].runnable && st[ri].exists),
                    m.iter().any(|&ri| st[ri].required && st[ri].exists),
                )
            } else {
                (
                    m.iter().all(|&ri| st[ri].runnable || !st[ri].exists),
                    m.iter().any(|&ri| st[ri].required && st[ri].runnable),
                )
            };
            (runnable, required, format!("{} running", obs.groups[gi].id))
        }
        End::Stop(ri) => (
            true,
            stop_required(obs, st, ri),
            format!("{} stop", obs.resources[ri].id),
        ),
        End::GroupStop(gi) => (
            true,
            obs.groups[gi]
                .members
                .iter()
                .any(|&ri| stop_required(obs, st, ri)),
            format!("{} stopped", obs.groups[gi].id),
        ),
        // Required when one instance's promote is: a promotion, or the restart of an instance
        // staying promoted. (Runnable: only the runnable-left of a mandatory ordering would
        // read it, and those are left to the plan.)
        End::ClonePromote(gi) => {
            let required = obs.groups[gi]
                .members
                .iter()
                .any(|&ri| promote_required(&st[ri]));
            let task = if obs.groups[gi].clone.as_ref().is_some_and(|c| c.notify) {
                "notified"
            } else {
                "promoted"
            };
            (true, required, format!("{} {task}", obs.groups[gi].id))
        }
    }
}

/// Whether a dangling migration (or a migrate_to pending on a lost source) leaves resource
/// `r` a stop on a node other than `current`. Pacemaker orders migrate_from before every stop
/// of the resource, and that stop cannot migrate, so the migration becomes unrunnable and the
/// resource moves by stop and start (Pacemaker 2.1.5, `pe_order_implies_first_migratable`;
/// migrate-partial-4).
fn dangling_stop_elsewhere(r: &crate::observed::Resource, current: usize) -> bool {
    r.dangling_sources
        .iter()
        .chain(&r.stops_forced)
        .any(|&n| n != current)
}

/// Whether a resource's migration is a partial one being continued (not a new decision).
fn r_partial(obs: &Observed, ri: usize) -> bool {
    obs.resources[ri].partial_migration.is_some()
}

fn then_members(obs: &Observed, e: End) -> Vec<usize> {
    match e {
        End::Start(ri) | End::Stop(ri) => vec![ri],
        End::GroupRunning(gi) | End::GroupStart(gi) | End::GroupStop(gi) => {
            obs.groups[gi].members.clone()
        }
        End::OneOrMore(_) | End::ClonePromote(_) => vec![],
    }
}

/// Whether a change of `ri`'s start can change what ordering end `e` says as a first.
fn first_involves(obs: &Observed, rx: &[Relaxed], e: End, ri: usize) -> bool {
    match e {
        End::Start(r) | End::Stop(r) => r == ri,
        End::GroupRunning(gi)
        | End::GroupStart(gi)
        | End::GroupStop(gi)
        | End::ClonePromote(gi) => obs.groups[gi].members.contains(&ri),
        End::OneOrMore(k) => rx[k].firsts.iter().any(|&m| match m {
            Member::Rsc(r) => r == ri,
            Member::Group(gi) => obs.groups[gi].members.contains(&ri),
        }),
    }
}

/// Applies one mandatory ordering to one then start; returns whether the start changed.
/// Pacemaker keeps the first reason set on an action: a required first makes an optional then
/// required ("required" reason) before an unrunnable first makes it unrunnable ("unrunnable").
/// An active resource whose start cannot run stops, and its required stop requires its start
/// (Pacemaker orders stop before start with implies-then), which in turn requires what follows.
fn apply_ordering(
    obs: &Observed,
    rx: &[Relaxed],
    desired: &Desired,
    st: &mut [StartState],
    f: End,
    ri: usize,
    mode: Mode,
) -> bool {
    let (f_runnable, f_required, desc) = first_state(obs, rx, st, f);
    // A clone's running as the first of a primitive's start is required only where that start
    // is: Pacemaker sums the instances' flags for the then's node (a group's or clone's start
    // has none).
    let node_of =
        |m: usize| desired.assigned[m].or_else(|| obs.resources[m].running_on.first().copied());
    let f_required = match f {
        End::GroupRunning(gi)
            if f_required
                && obs.groups[gi].clone.is_some()
                && obs.resources[ri].group.is_none() =>
        {
            match node_of(ri) {
                Some(n) => obs.groups[gi]
                    .members
                    .iter()
                    .any(|&m| st[m].exists && st[m].required && node_of(m) == Some(n)),
                None => true,
            }
        }
        // (likewise a promotable clone's promote: an instance promoted on the then's node)
        End::ClonePromote(gi) if f_required => match node_of(ri) {
            Some(n) => obs.groups[gi]
                .members
                .iter()
                .any(|&m| promote_required(&st[m]) && desired.assigned[m] == Some(n)),
            None => true,
        },
        _ => f_required,
    };
    if mode == Mode::Implies {
        let s = &mut st[ri];
        if !s.exists || s.unmanaged {
            return false;
        }
        // (runnable-left too: a bundle's connection may be placed while its container cannot
        // start, and what is placed on its guest node cannot start either)
        let active = !obs.resources[ri].running_on.is_empty();
        return take_first(s, f_required, f_runnable, &desc, active);
    }
    // A configured first that stops has a required, unrunnable start, so a then that stays
    // (its start optional) takes "required" first (`pcmk__update_ordered_actions` applies
    // pe_order_implies_then before pe_order_runnable_left; the reason first set is kept).
    let f_required = f_required
        || (mode == Mode::Configured
            && matches!(f, End::Start(m) if st[m].stop_implied)
            && !st[ri].stopping
            && !st[ri].required);
    // A clone's start or stop being required does not require its instances' (only an
    // unrunnable clone start makes theirs unrunnable); inside an instance of a clone of a
    // group, its members require each other as a group's do.
    let f_required = f_required
        && match crate::clone_groups::clone_of(obs, ri) {
            None => true,
            // (an ordering before a bundle's start passes the first's flags on to each
            // container's start, as `pcmk__multi_update_actions` does without interleaving)
            Some(c)
                if mode == Mode::Symmetric
                    && obs.bundles.iter().any(|b| b.containers == c)
                    && obs.groups[c]
                        .clone
                        .as_ref()
                        .is_some_and(|cl| !cl.interleave) =>
            {
                true
            }
            // (an interleaved ordering relates an instance of another clone to this one)
            Some(c)
                if matches!(f, End::Start(m) | End::Stop(m)
                    if crate::clones::interleaved_instance(obs, m, c)) =>
            {
                true
            }
            // (a primitive's start ordered before the clone passes its flags on to each
            // instance's start, as `pcmk__multi_update_actions` does without interleaving)
            Some(_)
                if matches!(f, End::Start(m)
                    if obs.resources[m].group.is_none()) =>
            {
                true
            }
            // (likewise an instance group of another clone of groups)
            Some(c)
                if matches!(f, End::GroupRunning(g) | End::GroupStart(g) | End::GroupStop(g)
                    if crate::clone_groups::is_instance(obs, g)
                        && obs.groups[g].members.first().and_then(|&m| crate::clone_groups::clone_of(obs, m)) != Some(c)) =>
            {
                true
            }
            Some(_) => {
                let own = obs.resources[ri]
                    .group
                    .filter(|&g| obs.groups[g].clone.is_none());
                let first_group = match f {
                    End::Start(m) | End::Stop(m) => obs.resources[m].group,
                    End::GroupRunning(g) | End::GroupStart(g) | End::GroupStop(g) => Some(g),
                    End::OneOrMore(_) | End::ClonePromote(_) => None,
                };
                own.is_some() && first_group == own
            }
        };
    let s = &mut st[ri];
    if !s.exists {
        return false;
    }
    let before = (s.runnable, s.required);
    if mode == Mode::Stop {
        // The then's stop is required (no reason on its start: a restart shows none).
        if f_required && !s.required && !s.unmanaged && !obs.resources[ri].running_on.is_empty() {
            s.required = true;
        }
        return before != (s.runnable, s.required);
    }
    if mode == Mode::Asymmetric {
        let running = &obs.resources[ri].running_on;
        let stays = running.len() == 1 && desired.assigned[ri] == Some(running[0]) && !s.required;
        if !stays && !f_runnable && s.runnable {
            s.runnable = false;
            s.reason.get_or_insert(format!("unrunnable {desc}"));
        }
        return before != (s.runnable, s.required);
    }
    let active = !s.unmanaged && !obs.resources[ri].running_on.is_empty();
    take_first(s, f_required, f_runnable, &desc, active)
}

/// What a first makes of a then start: required when the first is ("required" reason), then
/// unrunnable when the first is ("unrunnable"), Pacemaker keeping the first reason set; an
/// `active` then that cannot start must stop (its stop, and so its start, required). Returns
/// whether the start changed.
fn take_first(
    s: &mut StartState,
    f_required: bool,
    f_runnable: bool,
    desc: &str,
    active: bool,
) -> bool {
    let before = (s.runnable, s.required);
    if f_required && !s.required {
        s.required = true;
        s.reason.get_or_insert(format!("required {desc}"));
    }
    if !f_runnable && s.runnable {
        s.runnable = false;
        s.reason.get_or_insert(format!("unrunnable {desc}"));
        if active {
            s.required = true;
        }
    }
    before != (s.runnable, s.required)
}

/// Re-applies, depth first, the orderings whose first is `ri`'s start (or its group's), after
/// that start changed, as Pacemaker re-processes a changed action's dependents at once.
fn settle(
    obs: &Observed,
    rx: &[Relaxed],
    desired: &Desired,
    rels: &[(End, End, Mode)],
    st: &mut [StartState],
    ri: usize,
) {
    for &(f, t, mode) in rels {
        if !first_involves(obs, rx, f, ri) {
            continue;
        }
        for m in then_members(obs, t) {
            if apply_ordering(obs, rx, desired, st, f, m, mode) {
                settle(obs, rx, desired, rels, st, m);
            }
        }
    }
}

/// Whether ordering `o` implies its then (Pacemaker's `handle_restart_type`): mandatory and
/// symmetrical, or optional with a then (a group's or primitive's meta-attributes) of the
/// deprecated restart-type=restart.
pub(crate) fn implies_then(obs: &Observed, o: &crate::cib::Order) -> bool {
    match o.kind.as_str() {
        "mandatory" => o.symmetrical != Some(false),
        "optional" => {
            let then_meta = match (obs.group_index(&o.then), obs.rsc_index(&o.then)) {
                (Some(g), _) => Some(&obs.groups[g].meta),
                (None, Some(r)) => Some(&obs.resources[r].meta),
                _ => None,
            };
            then_meta
                .and_then(|m| m.get("restart-type"))
                .is_some_and(|v| v.eq_ignore_ascii_case("restart"))
        }
        _ => false,
    }
}

/// Whether an instance's promote is required (`st`: its start state): it runs and is a
/// promotion, or the restart of an instance staying promoted.
fn promote_required(s: &StartState) -> bool {
    s.exists && s.runnable && s.promote.is_some_and(|kept| !kept || s.required)
}

/// Applies mandatory orderings: an unrunnable first start makes the then start unrunnable, and a
/// required first start makes the then start required (a restart when it would otherwise stay).
#[allow(clippy::needless_range_loop)] // indexes run over parallel per-resource tables
pub fn propagate_orderings(obs: &Observed, desired: &Desired, rec: &mut Reconciliation) {
    let n = obs.resources.len();
    let rx = crate::one_or_more::collect(obs);
    let mut st: Vec<StartState> = vec![StartState::default(); n];
    for ri in 0..n {
        if desired.unmanaged[ri] {
            // An unmanaged resource keeps an (optional) start only where it is active and not
            // frozen by a failure (on-fail=block); otherwise the start an ordering refers to
            // has no node and cannot run.
            let r = &obs.resources[ri];
            st[ri] = StartState {
                exists: true,
                runnable: !r.running_on.is_empty() && !r.blocked,
                unmanaged: true,
                ..StartState::default()
            };
            continue;
        }
        let s = &mut st[ri];
        s.exists = true;
        s.runnable = desired.assigned[ri].is_some();
        s.stopping = !obs.resources[ri].running_on.is_empty()
            && !matches!(rec.changes[ri], Change::Keep | Change::Start { .. });
        if let (Some(Role::Promoted), Some(t)) = (desired.next_roles[ri], desired.assigned[ri]) {
            let r = &obs.resources[ri];
            s.promote = Some(r.role == Role::Promoted && r.running_on == [t]);
        }
        match &rec.changes[ri] {
            Change::Keep => {}
            Change::Start { blocked, .. } => {
                s.required = true;
                if blocked.is_some() {
                    s.runnable = false;
                }
            }
            Change::Stop { .. } => {
                s.runnable = false;
                s.stop_implied = !obs.resources[ri].running_on.is_empty();
            }
            Change::Migrate { .. } => {}
            _ => s.required = true,
        }
    }
    // Interleaved then instances with no first instance placed on their node are unassigned
    // (an active one stops, without a reason); this cascades along interleaved orderings.
    let mut assigned = desired.assigned.clone();
    loop {
        let mut changed = false;
        for (o, (fg, tg)) in crate::clones::interleaved_starts(obs) {
            if o.kind != "mandatory" {
                continue;
            }
            let paired: Vec<crate::clones::Instance> =
                crate::clones::unit_pairs(obs, &assigned, fg, tg, false)
                    .into_iter()
                    .map(|(_, t)| t)
                    .collect();
            for unit in crate::clones::instance_units(obs, tg) {
                let members = unit.members(obs);
                let Some(&lead) = members.first() else {
                    continue;
                };
                if assigned[lead].is_none() || paired.contains(&unit) || desired.unmanaged[lead] {
                    continue;
                }
                for t in members {
                    if assigned[t].is_none() && obs.resources[t].running_on.is_empty() {
                        continue;
                    }
                    assigned[t] = None;
                    rec.inhibited.insert(t);
                    st[t].runnable = false;
                    // (an active one stops: its required stop requires its start, which
                    // cannot run)
                    if !obs.resources[t].running_on.is_empty() {
                        st[t].required = true;
                    }
                }
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    // (first, then, mode): an asymmetrical mandatory ordering (symmetrical=false)
    // neither requires its then nor touches a then already started where it stays.
    let mut rels: Vec<(End, End, Mode)> = Vec::new();
    // `pcmk__block_colocation_dependents` runs before any ordering is met: a bundle colocated
    // (INFINITY) with a resource none of whose parts was assigned (their starts unrunnable
    // when created) has its inner instances' starts blocked first (`mark_action_blocked`
    // recurses into the bundle's inner clone), "due to colocation with PRIMARY".
    for (dependent, primary, dependent_role, _) in &obs.mandatory_colocations {
        if *dependent_role == Some(Role::Promoted) {
            continue;
        }
        let Some(inner) = obs
            .bundles
            .iter()
            .find(|b| &b.id == dependent)
            .and_then(|b| b.child)
        else {
            continue;
        };
        let parts = match (obs.group_index(primary), obs.rsc_index(primary)) {
            (Some(g), _) => obs.groups[g].members.clone(),
            (None, Some(r)) => vec![r],
            _ => continue,
        };
        let Some(&cause) = parts.first() else {
            continue;
        };
        if parts.iter().any(|&p| desired.assigned[p].is_some()) {
            continue;
        }
        let desc = format!("colocation with {}", obs.resources[cause].id);
        for &m in &obs.groups[inner].members {
            let s = &mut st[m];
            if s.exists && s.runnable && !s.unmanaged {
                s.runnable = false;
                s.reason.get_or_insert(desc.clone());
                if !obs.resources[m].running_on.is_empty() {
                    s.required = true;
                }
            }
        }
    }
    // What runs on a guest node restarts with its container (the reason Pacemaker gives
    // first). But a guest's connection left unassigned has a start unrunnable from its
    // creation, and `apply_container_ordering` orders that start before what runs there after
    // the container's: the newer ordering is met first, "due to unrunnable CONNECTION start".
    let guest_restarts = crate::guest::implied_restarts(obs, &desired.assigned);
    for &(_, ri) in &guest_restarts {
        let connection = desired.assigned[ri]
            .and_then(|ni| obs.nodes[ni].remote.as_ref())
            .and_then(|rn| rn.connection)
            .filter(|&c| desired.assigned[c].is_none());
        if let Some(c) = connection {
            rels.push((End::Start(c), End::Start(ri), Mode::Implies));
        }
    }
    for &(k, ri) in &guest_restarts {
        rels.push((End::Start(k), End::Start(ri), Mode::Implies));
    }
    for g in
        (0..obs.groups.len()).filter(|&g| obs.groups[g].clone.is_none() && obs.groups[g].chained())
    {
        let m = &obs.groups[g].members;
        for w in m.windows(2) {
            rels.push((End::Start(w[0]), End::Start(w[1]), Mode::Symmetric));
        }
    }
    for o in &obs.orders {
        if o.first_action == "stop" && o.then_action == "stop" {
            // Stop then stop implies the then's stop when symmetrical and mandatory, or when
            // optional and the then has the deprecated restart-type=restart.
            let end = |id: &str| match (obs.group_index(id), obs.rsc_index(id)) {
                (Some(g), _) => Some(End::GroupStop(g)),
                (None, Some(r)) => Some(End::Stop(r)),
                _ => None,
            };
            let implies_then = implies_then(obs, o);
            if let Some((fg, tg)) = crate::clones::interleaved(obs, &o.first, &o.then, "stop") {
                if implies_then {
                    for (f, t) in crate::clones::unit_pairs(obs, &desired.assigned, fg, tg, true) {
                        rels.push((stop_end(f), stop_end(t), Mode::Stop));
                    }
                }
                continue;
            }
            if let (true, Some(f), Some(t)) = (implies_then, end(&o.first), end(&o.then)) {
                rels.push((f, t, Mode::Stop));
            }
            continue;
        }
        // (a one-or-more ordering gates its thens through its pseudo action, below)
        if crate::one_or_more::name_of(obs, o).is_some() {
            continue;
        }
        // A promotable clone's promote before a start implies that start when the ordering is
        // mandatory and symmetrical, or optional with a then of the deprecated
        // restart-type=restart (`handle_restart_type`): a then staying where it is restarts
        // after a required promote on its node (the runnable-left of a mandatory one is left
        // to the plan).
        if matches!(o.kind.as_str(), "optional" | "mandatory")
            && o.first_action == "promote"
            && o.then_action == "start"
            && crate::clones::interleaved(obs, &o.first, &o.then, "start").is_none()
        {
            let promotable = obs.group_index(&o.first).filter(|&g| {
                obs.groups[g]
                    .clone
                    .as_ref()
                    .is_some_and(|c| c.promotable.is_some())
            });
            let then = match (obs.group_index(&o.then), obs.rsc_index(&o.then)) {
                (Some(g), _) => Some(End::GroupStart(g)),
                (None, Some(r)) => Some(End::Start(r)),
                _ => None,
            };
            if let (Some(fg), Some(then)) = (promotable, then) {
                if implies_then(obs, o) {
                    rels.push((End::ClonePromote(fg), then, Mode::Symmetric));
                }
            }
            continue;
        }
        // An optional start ordering whose then clone has the deprecated restart-type=restart
        // implies the then (Pacemaker follows it to every instance's start, so active ones
        // restart).
        if o.kind == "optional"
            && o.first_action == "start"
            && o.then_action == "start"
            && crate::clones::interleaved(obs, &o.first, &o.then, "start").is_none()
        {
            let clone_restarts = obs
                .group_index(&o.then)
                .is_some_and(|g| obs.groups[g].clone.is_some())
                && implies_then(obs, o);
            let first = match (obs.group_index(&o.first), obs.rsc_index(&o.first)) {
                (Some(g), _) => Some(End::GroupRunning(g)),
                (None, Some(r)) => Some(End::Start(r)),
                _ => None,
            };
            if let (true, Some(first), Some(g)) = (clone_restarts, first, obs.group_index(&o.then))
            {
                rels.push((first, End::GroupStart(g), Mode::Implies));
            }
            continue;
        }
        if o.kind != "mandatory" || o.first_action != "start" || o.then_action != "start" {
            continue;
        }
        let mode = if o.symmetrical == Some(false) {
            Mode::Asymmetric
        } else {
            Mode::Symmetric
        };
        // Interleaved clones: each then instance after the first instance placed on its node.
        if let Some((fg, tg)) = crate::clones::interleaved(obs, &o.first, &o.then, "start") {
            for (f, t) in crate::clones::unit_pairs(obs, &assigned, fg, tg, false) {
                let first = match f {
                    crate::clones::Instance::Rsc(r) => End::Start(r),
                    crate::clones::Instance::Group(g) => End::GroupRunning(g),
                };
                let then = match t {
                    crate::clones::Instance::Rsc(r) => End::Start(r),
                    crate::clones::Instance::Group(g) => End::GroupStart(g),
                };
                rels.push((first, then, mode));
            }
            continue;
        }
        let first = match (obs.group_index(&o.first), obs.rsc_index(&o.first)) {
            (Some(g), _) => End::GroupRunning(g),
            (None, Some(r)) => End::Start(r),
            _ => continue,
        };
        let then = match (obs.group_index(&o.then), obs.rsc_index(&o.then)) {
            (Some(g), _) => End::GroupStart(g),
            (None, Some(r)) => End::Start(r),
            _ => continue,
        };
        let configured =
            !crate::container::is_implied_order(o) && !crate::bundles::is_implied_order(o);
        let mode = match (mode, first) {
            (Mode::Symmetric, End::Start(_)) if configured => Mode::Configured,
            _ => mode,
        };
        rels.push((first, then, mode));
    }
    // A one-or-more pseudo action makes its thens unrunnable when it is (whatever the
    // ordering's kind: "runnable left" is always set), never required.
    for (k, r) in rx.iter().enumerate() {
        for (then, action) in &r.thens {
            if action != "start" {
                continue;
            }
            let then = match (obs.group_index(then), obs.rsc_index(then)) {
                (Some(g), _) => End::GroupStart(g),
                (None, Some(r)) => End::Start(r),
                _ => continue,
            };
            rels.push((End::OneOrMore(k), then, Mode::Symmetric));
        }
    }
    // (the container's reason is given before any the resource's group or orderings give)
    for &(f, t, mode) in rels.iter().filter(|r| r.2 == Mode::Implies) {
        for ri in then_members(obs, t) {
            apply_ordering(obs, &rx, desired, &mut st, f, ri, mode);
        }
    }
    for _ in 0..(n + 2) {
        let mut changed = false;
        for &(f, t, mode) in &rels {
            for ri in then_members(obs, t) {
                if apply_ordering(obs, &rx, desired, &mut st, f, ri, mode) {
                    changed = true;
                    settle(obs, &rx, desired, &rels, &mut st, ri);
                }
            }
        }
        if !changed {
            break;
        }
    }
    rec.one_or_more = rx
        .iter()
        .enumerate()
        .map(|(k, r)| (r.clone(), first_state(obs, &rx, &st, End::OneOrMore(k)).0))
        .collect();
    for &(f, t, mode) in &rels {
        if let End::GroupStart(gi) = t {
            if !first_state(obs, &rx, &st, f).0 {
                rec.blocked_group_starts.insert(gi);
                if mode == Mode::Asymmetric {
                    rec.asymmetric_blocked_group_starts.insert(gi);
                }
            }
        }
    }
    // A migration ordered after a start that is not itself a migration (the first resource
    // moves by stop and start) cannot happen: the resource moves by stop and start too.
    let moves_by_restart = |ri: usize, changes: &[Change]| {
        matches!(
            changes[ri],
            Change::Move { .. } | Change::Recover { .. } | Change::Restart { .. }
        )
    };
    for _ in 0..(n + 2) {
        let mut changed = false;
        for &(f, t, _) in &rels {
            // (A group or clone first: one of its members or instances moves by restart.)
            let (fr, first_id) = match f {
                End::Start(fr) => (Some(fr), &obs.resources[fr].id),
                End::GroupRunning(gi) => (
                    obs.groups[gi]
                        .members
                        .iter()
                        .copied()
                        .find(|&m| moves_by_restart(m, &rec.changes)),
                    &obs.groups[gi].id,
                ),
                _ => continue,
            };
            if fr
                .filter(|&fr| moves_by_restart(fr, &rec.changes))
                .is_none()
            {
                continue;
            }
            // (Only a primitive then: the ordering that makes its migrate_to wait names the
            // then's migrate_to, which a group does not have; its members migrate.)
            let End::Start(then) = t else { continue };
            for ri in [then] {
                if let Change::Migrate { source, target } = rec.changes[ri] {
                    if r_partial(obs, ri) {
                        continue;
                    }
                    rec.changes[ri] = Change::Move {
                        source,
                        target,
                        stops: vec![source],
                    };
                    rec.move_reasons
                        .insert(ri, format!("unrunnable {first_id} stop"));
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    for ri in 0..n {
        let s = &st[ri];
        // A start an ordering changed has a reason, except one required by a stop ordering.
        if !s.exists
            || (s.reason.is_none() && !s.required && !rec.inhibited.contains(&ri))
            || s.unmanaged
        {
            continue;
        }
        let r = &obs.resources[ri];
        let reason = s.reason.clone();
        let change = rec.changes[ri].clone();
        rec.changes[ri] = match change {
            // An active resource whose start cannot run (an ordering's first cannot) stops.
            Change::Keep if !s.runnable && !r.running_on.is_empty() => Change::Stop {
                sources: r.running_on.clone(),
                reason,
                blocked: false,
            },
            Change::Keep if s.required && r.running_on.len() == 1 => Change::Restart {
                node: r.running_on[0],
                reason,
            },
            Change::Start {
                target,
                blocked: None,
            } if !s.runnable => Change::Start {
                target,
                blocked: reason.or_else(|| rec.inhibited.contains(&ri).then(String::new)),
            },
            Change::Move { stops, .. } | Change::Recover { stops, .. } if !s.runnable => {
                Change::Stop {
                    sources: stops,
                    reason,
                    blocked: false,
                }
            }
            Change::Migrate { source, target } if !s.runnable => {
                rec.unrunnable_migrations.insert(ri, (source, target));
                Change::Stop {
                    sources: vec![source],
                    reason,
                    blocked: false,
                }
            }
            Change::Migrate { source, target }
                if s.required
                    && s.reason
                        .as_deref()
                        .map(|r| r.starts_with("required"))
                        .unwrap_or(false) =>
            {
                Change::Migrate { source, target }
            }
            other => other,
        };
    }
}

/// Whether failed resource `r` recovers by demotion only (on-fail=demote: Pacemaker's failed
/// flag without its stop flag, a demote required where it failed, no restart).
pub fn recovers_by_demotion(r: &crate::observed::Resource) -> bool {
    r.failed && !r.stop_flag && !r.unpack_demotes.is_empty()
}
