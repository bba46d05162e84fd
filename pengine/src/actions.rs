//! Reconciliation sets -> actions and ordering edges (probes first, stop before start, groups, constraints, fencing).

use std::collections::BTreeMap;

use crate::observed::{Observed, Role, Top};
use crate::placement::Desired;
use crate::reconcile::{Change, Reconciliation};

/// What an action does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Probe,
    Start,
    Stop,
    Monitor {
        interval_ms: u64,
    },
    /// A recurring monitor for the Stopped role (expects "not running").
    StoppedMonitor {
        interval_ms: u64,
    },
    /// Cancel a recurring operation that is no longer wanted. A cancel found in the history
    /// (orphaned, disabled or in maintenance) names the cancelled call (`call_id`).
    Cancel {
        interval_ms: u64,
        call_id: Option<i64>,
    },
    /// A live migration: expanded to migrate_to, migrate_from, stop and a pseudo start by the renderer.
    Migrate {
        source: usize,
        target: usize,
    },
    GroupStart,
    GroupRunning,
    GroupStop,
    GroupStopped,
    /// A promotable clone instance's promote and demote (see `crate::promotable`).
    Promote,
    Demote,
    /// A promotable clone's pseudo actions around its instances' promotes and demotes.
    GroupPromote,
    GroupPromoted,
    GroupDemote,
    GroupDemoted,
    Fence,
    /// The pseudo fencing of a guest node (see `crate::guest::GuestFence`).
    GuestFence {
        off: bool,
    },
    /// Unfencing of the node (fencing action "on"; see `unfencing`).
    Unfence,
    Shutdown,
    ClearFailcount,
    /// Erase the resource's history on the node (`lrm_delete`): an expired shutdown lock.
    LrmDelete,
    /// An agent reload applying changed parameters in place (`reload-agent`).
    Reload,
    /// Forget a resource's history on a node (an orphan's clean-up).
    Delete,
    /// Pseudo action "load_stopped_<node>" (placement strategies other than default).
    LoadStopped,
    /// A one-or-more ordering's pseudo action, by name (see `crate::one_or_more`).
    OneOrMore(String),
}

/// What an ordering edge relates, so a migration's expansion picks the right half.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rel {
    /// start (or running) before start.
    Start,
    /// stop before stop, from an ordering constraint.
    Stop,
    /// stop before stop (or stopped) inside a group.
    GroupStop,
    /// stop before start, from an ordering constraint (or an anti-colocation): a migrating
    /// first orders its stop, a migrating then its pseudo start (no migrate_to equivalent).
    StopStart,
    /// An action on a remote node before its connection stops, from a migration away from that
    /// node: the migration's migrate_to and stop both come first (a migrating then: its stop).
    SourceStop,
    /// Anything else (probe before start, start before monitor, fencing before stop).
    Plain,
    /// An optional ordering (a group's stopped before its start): it orders the graph when
    /// both run, but a first that cannot run leaves its then runnable.
    Optional,
}

/// One action of the plan.
#[derive(Debug, Clone)]
pub struct Action {
    pub kind: Kind,
    pub rsc: Option<usize>,
    pub group: Option<usize>,
    pub node: Option<usize>,
    pub pseudo: bool,
    pub runnable: bool,
    pub reason: Option<String>,
    /// A required but unrunnable action kept only so DOT can draw it (never in the graph).
    pub dot_only: bool,
    /// Unrunnable from its creation and required by nothing: Pacemaker keeps it optional, so
    /// neither the graph nor DOT shows it (a start blocked by the quorum policy).
    pub optional: bool,
    /// Where Pacemaker creates this action, as a plan position, when not where the plan adds
    /// it: an active recurring monitor of the history is created while the history is
    /// unpacked (before that resource's unpack stops), so it is older than the resource's
    /// other actions and comes after them in the synapse order (see `graph::expand`).
    pub created_at: Option<usize>,
}

/// Actions plus "first before then" edges (indexes into `actions`).
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub actions: Vec<Action>,
    pub edges: Vec<(usize, usize, Rel)>,
    /// Top-level entries in processing order.
    pub order: Vec<Top>,
    /// Migrations given up for a stop and start because a resource ordered first does not
    /// migrate: (resource, source, target). Pacemaker keeps their migrate_to and migrate_from,
    /// unrunnable, so DOT draws them (see `graph::expand`).
    pub abandoned_migrations: Vec<(usize, usize, usize)>,
    /// Optional orderings whose first is the stop of a migration: Pacemaker keeps them out of
    /// the graph (the stop only ends the migration), DOT draws them dashed.
    pub drawn_orderings: Vec<(usize, usize)>,
    /// Start orderings with an unrunnable start that is only drawn (`Action::dot_only`) on
    /// either side: they order nothing, DOT draws them dashed.
    pub dot_orderings: Vec<(usize, usize)>,
    /// Per clone (group index) in an asymmetric cluster or with exclusive discovery: the nodes
    /// it is allowed on (those its instances have a score for, less those exclusive discovery
    /// drops), Pacemaker's `notify_available_uname`.
    pub clone_allowed: BTreeMap<usize, Vec<usize>>,
    /// The plan position where Pacemaker unpacks the history's active recurring monitors
    /// (see `Action::created_at`): an action reusing one of them takes this position.
    pub unpack_mark: usize,
}

impl Plan {
    pub(crate) fn add(&mut self, a: Action) -> usize {
        // One clear_failcount per resource and node: Pacemaker finds the one already created.
        if a.kind == Kind::ClearFailcount {
            if let Some(i) = self
                .actions
                .iter()
                .position(|b| b.kind == Kind::ClearFailcount && b.rsc == a.rsc && b.node == a.node)
            {
                return i;
            }
        }
        self.actions.push(a);
        self.actions.len() - 1
    }
    pub fn find(&self, rsc: usize, kind: &Kind) -> Vec<usize> {
        (0..self.actions.len())
            .filter(|&i| {
                self.actions[i].rsc == Some(rsc)
                    && &self.actions[i].kind == kind
                    && !self.actions[i].dot_only
            })
            .collect()
    }
    pub(crate) fn find_group_action(&self, g: usize, kind: &Kind) -> Option<usize> {
        self.find_group(g, kind)
    }
    fn find_group(&self, g: usize, kind: &Kind) -> Option<usize> {
        (0..self.actions.len()).find(|&i| {
            self.actions[i].group == Some(g)
                && self.actions[i].rsc.is_none()
                && &self.actions[i].kind == kind
        })
    }
    /// Start-like actions of a resource (start, or the migration that implies one).
    pub fn starts(&self, rsc: usize) -> Vec<usize> {
        (0..self.actions.len())
            .filter(|&i| {
                self.actions[i].rsc == Some(rsc)
                    && matches!(self.actions[i].kind, Kind::Start | Kind::Migrate { .. })
                    && !self.actions[i].dot_only
            })
            .collect()
    }
    /// The starts of a resource that are only drawn (DOT), not in the graph.
    pub fn drawn_starts(&self, rsc: usize) -> Vec<usize> {
        (0..self.actions.len())
            .filter(|&i| {
                let a = &self.actions[i];
                a.rsc == Some(rsc) && a.kind == Kind::Start && a.dot_only
            })
            .collect()
    }
    pub fn stops(&self, rsc: usize) -> Vec<usize> {
        (0..self.actions.len())
            .filter(|&i| {
                self.actions[i].rsc == Some(rsc)
                    && matches!(self.actions[i].kind, Kind::Stop | Kind::Migrate { .. })
                    && !self.actions[i].dot_only
            })
            .collect()
    }
    pub(crate) fn edge(&mut self, a: usize, b: usize) {
        self.edge_rel(a, b, Rel::Plain);
    }
    pub(crate) fn edge_rel(&mut self, a: usize, b: usize, rel: Rel) {
        if a != b && !self.edges.iter().any(|e| e.0 == a && e.1 == b) {
            self.edges.push((a, b, rel));
        }
    }
}

/// A runnable, mandatory, non-pseudo action of `kind`: the one place an `Action` is built; callers
/// adjust the fields that differ.
pub(crate) fn act(kind: Kind, rsc: Option<usize>, node: Option<usize>) -> Action {
    Action {
        kind,
        rsc,
        group: None,
        node,
        pseudo: false,
        runnable: true,
        reason: None,
        dot_only: false,
        optional: false,
        created_at: None,
    }
}

/// A group's pseudo action that is required but cannot run: drawn in the DOT only.
fn drawn_group_pseudo(kind: Kind, gi: usize) -> Action {
    Action {
        group: Some(gi),
        pseudo: true,
        dot_only: true,
        runnable: false,
        ..act(kind, None, None)
    }
}

/// Whether another operation of the resource has the same name and interval: Pacemaker
/// schedules neither as a recurring operation (enabled or not, each is a duplicate).
pub(crate) fn duplicated(obs: &Observed, ri: usize, op: &crate::cib::OpDef) -> bool {
    obs.resources[ri]
        .ops
        .iter()
        .filter(|o| o.name == op.name && o.interval_ms == op.interval_ms)
        .count()
        > 1
}

fn stopped_monitors(obs: &Observed, ri: usize) -> Vec<u64> {
    obs.resources[ri]
        .ops
        .iter()
        .filter(|o| o.name == "monitor" && o.interval_ms > 0 && o.enabled)
        .filter(|o| !duplicated(obs, ri, o))
        .filter(|o| {
            o.role
                .as_deref()
                .map(|r| r.eq_ignore_ascii_case("stopped"))
                .unwrap_or(false)
        })
        .map(|o| o.interval_ms)
        .collect()
}

fn recurring_monitors(obs: &Observed, ri: usize) -> Vec<u64> {
    obs.resources[ri]
        .ops
        .iter()
        .filter(|o| o.name == "monitor" && o.interval_ms > 0 && o.enabled)
        .filter(|o| !duplicated(obs, ri, o))
        .filter(|o| {
            o.role
                .as_deref()
                .map(|r| r.eq_ignore_ascii_case("started"))
                .unwrap_or(true)
        })
        .map(|o| o.interval_ms)
        .collect()
}

/// The recurring monitors for the role a resource will have: for a promotable instance, those
/// configured for its next role (Promoted or Unpromoted; a monitor without a role is an
/// Unpromoted one), as Pacemaker 2.1.5 schedules them; else `recurring_monitors`.
fn monitors_for(obs: &Observed, desired: &Desired, ri: usize) -> Vec<u64> {
    let next = desired.next_roles.get(ri).copied().flatten();
    let Some(next @ (Role::Promoted | Role::Unpromoted)) = next else {
        return recurring_monitors(obs, ri);
    };
    // An instance that is promoted or demoted gets its role's monitors after that (see
    // `promotable::add_role_actions`).
    let r = &obs.resources[ri];
    let current = (r.running_on.len() == 1).then(|| r.running_on[0]);
    let target = desired.assigned.get(ri).copied().flatten();
    let promoted_now = r.role == Role::Promoted;
    // (a promoted instance that moves and is not promoted again starts with its Unpromoted
    // monitors)
    let demoted_here = next == Role::Unpromoted && promoted_now && current == target;
    if (next == Role::Promoted && (!promoted_now || current != target)) || demoted_here {
        return Vec::new();
    }
    crate::promotable::role_monitors(obs, ri, next)
}

/// The recurring monitors of an unmanaged resource (not blocked by a failure, not in
/// maintenance). Pacemaker keeps it where it is active (its current node: the first node it
/// runs on, the first clean one when it does not need fencing) with its role, and schedules
/// its recurring monitors as for a managed one, without ordering them after its (optional)
/// start: on the current node (unless that node is in maintenance) each monitor for its role
/// that the history does not hold there is required, and a Stopped-role monitor the history
/// holds there is cancelled (that cancel reuses the history's action, created while unpacking);
/// on every other online node, each Stopped-role monitor the history does not hold is required.
fn unmanaged_recurring(obs: &Observed, plan: &mut Plan, ri: usize, unpack_mark: usize) {
    let r = &obs.resources[ri];
    if r.blocked || obs.maintenance_mode || r.meta_bool("maintenance", false) {
        return;
    }
    let clean = |ni: usize| obs.nodes[ni].online && !obs.nodes[ni].unclean;
    let current = obs.current_node(ri);
    let in_history = |ni: usize, iv: u64| r.unpacked_recurring.contains(&(ni, iv));
    if let Some(ni) = current {
        // (a promotable instance: its current role's monitors)
        let monitors = match r.role {
            crate::observed::Role::Started => recurring_monitors(obs, ri),
            role @ (crate::observed::Role::Promoted | crate::observed::Role::Unpromoted)
                if crate::promotable::is_instance(obs, ri) =>
            {
                crate::promotable::role_monitors(obs, ri, role)
            }
            _ => Vec::new(),
        };
        if !obs.nodes[ni].maintenance {
            for iv in monitors {
                if !in_history(ni, iv) {
                    let mut a = act(Kind::Monitor { interval_ms: iv }, Some(ri), Some(ni));
                    a.runnable = clean(ni);
                    plan.add(a);
                }
            }
        }
    }
    for iv in stopped_monitors(obs, ri) {
        for (ni, n) in obs.nodes.iter().enumerate() {
            if Some(ni) == current {
                if in_history(ni, iv) {
                    let mut a = act(
                        Kind::Cancel {
                            interval_ms: iv,
                            call_id: None,
                        },
                        Some(ri),
                        Some(ni),
                    );
                    a.created_at = Some(unpack_mark);
                    plan.add(a);
                }
            } else if !in_history(ni, iv) && n.online && !n.unclean && !n.pending {
                plan.add(act(
                    Kind::StoppedMonitor { interval_ms: iv },
                    Some(ri),
                    Some(ni),
                ));
            }
        }
    }
}

/// Builds the actions and their ordering.
/// The nodes each clone may run on (an asymmetric cluster's scores, less the nodes exclusive
/// discovery drops), and the migrations abandoned for a stop and start.
fn clone_nodes_and_abandoned_migrations(
    obs: &Observed,
    desired: &Desired,
    rec: &Reconciliation,
    plan: &mut Plan,
) {
    if !obs.symmetric {
        for (gi, g) in obs.groups.iter().enumerate() {
            if g.clone.is_none() || crate::clone_groups::is_instance(obs, gi) {
                continue;
            }
            let mut nodes: Vec<usize> = g
                .members
                .iter()
                .flat_map(|&m| desired.scores[m].keys().copied())
                .collect();
            nodes.sort_unstable();
            nodes.dedup();
            plan.clone_allowed.insert(gi, nodes);
        }
    }
    // A clone with exclusive discovery drops from its allowed nodes each node it is probed on
    // that no exclusive location marks (Pacemaker's `clone_create_probe`, so that its
    // notifications list only nodes it might run on).
    for (gi, g) in obs.groups.iter().enumerate() {
        if g.clone.is_none() || crate::clone_groups::is_instance(obs, gi) {
            continue;
        }
        let Some(&first) = g.members.first() else {
            continue;
        };
        if !desired
            .exclusive_discovery
            .get(first)
            .copied()
            .unwrap_or(false)
        {
            continue;
        }
        let dropped = |ni: usize| {
            let n = &obs.nodes[ni];
            // (a node fenced for what scheduling found was still clean when probed)
            n.online
                && !(n.unclean && n.fence_phase == 0)
                && !crate::remote::discovery_disabled(obs, ni)
                && desired.no_discovery[first].contains(&ni)
        };
        let nodes: Vec<usize> = match plan.clone_allowed.get(&gi) {
            Some(nodes) => nodes.clone(),
            None => (0..obs.nodes.len()).collect(),
        };
        let nodes = nodes.into_iter().filter(|&ni| !dropped(ni)).collect();
        plan.clone_allowed.insert(gi, nodes);
    }
    for &ri in rec.move_reasons.keys() {
        if let Change::Move { source, target, .. } = rec.changes[ri] {
            plan.abandoned_migrations.push((ri, source, target));
        }
    }
    for &ri in &rec.dangling_moves {
        if let Change::Move { source, target, .. } = rec.changes[ri] {
            if !rec.move_reasons.contains_key(&ri) {
                plan.abandoned_migrations.push((ri, source, target));
            }
        }
    }
    for (&ri, &(source, target)) in &rec.unrunnable_migrations {
        if matches!(rec.changes[ri], Change::Stop { .. }) {
            plan.abandoned_migrations.push((ri, source, target));
        }
    }
}

/// The fencing of `build`'s first step, chained as Pacemaker chains it.
struct Fencing {
    /// One fencing action per `rec.fence` entry, in its order.
    ids: Vec<usize>,
    /// `concurrent-fencing` is set.
    concurrent: bool,
    /// The fencings other than the DC's, in their chain order.
    others: Vec<usize>,
}

/// Fencing first (created while unpacking in Pacemaker): one action per fenced node, in
/// Pacemaker's creation order, chained unless concurrent, the DC's last.
fn add_fencing(obs: &Observed, rec: &Reconciliation, plan: &mut Plan) -> Fencing {
    let mut fence_ids = Vec::new();
    for (ni, reason) in &rec.fence {
        let mut a = act(Kind::Fence, None, Some(*ni));
        a.reason = Some(reason.clone());
        fence_ids.push(plan.add(a));
    }
    // (in the order Pacemaker creates them, which the synapse order follows: the k-th created
    // takes the k-th position; one already there keeps its own, so that it stays newer than
    // the unfencings, created at 0)
    for (k, f) in fencing_creation_order(obs, &rec.fence)
        .into_iter()
        .enumerate()
    {
        if k != f {
            plan.actions[fence_ids[f]].created_at = Some(fence_ids[k]);
        }
    }
    // The DC is fenced last; the others one after another unless concurrent-fencing is set.
    let concurrent = obs
        .option("concurrent-fencing")
        .map(crate::cib::is_true)
        .unwrap_or(false);
    let dc_fence: Option<usize> = rec
        .fence
        .iter()
        .zip(&fence_ids)
        .find(|((ni, _), _)| obs.nodes[*ni].is_dc)
        .map(|(_, &id)| id);
    let mut others: Vec<usize> = fence_ids
        .iter()
        .copied()
        .filter(|&id| Some(id) != dc_fence)
        .collect();
    // (the fencings decided while scheduling come last in `rec.fence` for the order they are
    // created in, but Pacemaker chains every fencing in node order once all are known,
    // `schedule_fencing_and_shutdowns`: those take their slots back in node order)
    let node_of = |id: usize| plan.actions[id].node.unwrap_or(usize::MAX);
    let late: Vec<usize> = (0..others.len())
        .filter(|&k| {
            plan.actions[others[k]]
                .node
                .is_some_and(|n| obs.nodes[n].fence_phase > 0)
        })
        .collect();
    let mut late_ids: Vec<usize> = late.iter().map(|&k| others[k]).collect();
    late_ids.sort_by_key(|&id| node_of(id));
    for (&k, id) in late.iter().zip(late_ids) {
        others[k] = id;
    }
    if !concurrent {
        for w in others.windows(2) {
            plan.edge(w[0], w[1]);
        }
    }
    // The DC's fencing follows each of the others when they run concurrently, else the last
    // of their chain.
    if let Some(dc) = dc_fence {
        if concurrent {
            for &o in &others {
                plan.edge(o, dc);
            }
        } else if let Some(&last) = others.last() {
            plan.edge(last, dc);
        }
    }
    Fencing {
        ids: fence_ids,
        concurrent,
        others,
    }
}

/// Created first (crm_simulate numbers them before the history's stops and fail-count
/// clears): maintenance cancels the recurring operations of an active resource: the resource's own
/// maintenance (or the cluster's), or its node's; so does their absence from the configuration
/// (orphaned operations, with stop-orphan-actions). Pacemaker checks only nodes that can run
/// resources or are in maintenance.
/// These cancels come after the resource's stops (ordered once the stops exist): the
/// (resource, cancel) pairs returned.
fn maintenance_cancels(obs: &Observed, plan: &mut Plan) -> Vec<(usize, usize)> {
    let mut after_stops: Vec<(usize, usize)> = Vec::new();
    let stop_orphan_actions = obs
        .option("stop-orphan-actions")
        .map(crate::cib::is_true)
        .unwrap_or(true);
    for (ri, r) in obs.resources.iter().enumerate() {
        if r.orphan {
            continue;
        }
        let rsc_maintenance = obs.maintenance_mode || r.meta_bool("maintenance", false);
        let mut cancels: Vec<(usize, u64, i64)> = Vec::new();
        for a in &r.recurring {
            let n = &obs.nodes[a.node];
            let checked = n.maintenance || (n.online && !n.shutdown && !n.unclean && !n.standby);
            if checked && (rsc_maintenance || n.maintenance) && r.running_on.contains(&a.node) {
                cancels.push((a.node, a.interval_ms, a.call_id));
            }
        }
        if stop_orphan_actions && !rsc_maintenance {
            for &(ni, iv, call_id) in &r.orphan_ops {
                if r.running_on.contains(&ni) && !cancels.iter().any(|c| (c.0, c.1) == (ni, iv)) {
                    cancels.push((ni, iv, call_id));
                }
            }
        }
        for (ni, interval_ms, call_id) in cancels {
            let kind = Kind::Cancel {
                interval_ms,
                call_id: Some(call_id),
            };
            let id = plan.add(act(kind, Some(ri), Some(ni)));
            after_stops.push((ri, id));
        }
    }
    after_stops
}

/// With a placement strategy, each resource orders its stops before a load_stopped pseudo
/// action on the nodes it runs on, and that action before its starts on every node it may
/// run on (by name): each is created when first needed, by Pacemaker's internal
/// constraints, before any probe and in configuration order sorted by priority.
fn add_load_stopped(
    obs: &Observed,
    desired: &Desired,
    plan: &mut Plan,
    load_stopped: &mut [Option<usize>],
) {
    if obs.placement_strategy != "default" {
        let mut by_name: Vec<usize> = (0..obs.nodes.len()).collect();
        by_name.sort_by(|&a, &b| obs.nodes[a].uname.cmp(&obs.nodes[b].uname));
        let priority = |meta: &BTreeMap<String, String>| {
            meta.get("priority")
                .and_then(|v| crate::cib::parse_score(v))
                .unwrap_or(0)
        };
        let mut tops: Vec<(i64, Vec<usize>)> = obs
            .top
            .iter()
            .map(|t| match *t {
                Top::Primitive(ri) => (priority(&obs.resources[ri].meta), vec![ri]),
                Top::Group(gi) => (
                    priority(&obs.groups[gi].meta),
                    obs.groups[gi].members.clone(),
                ),
            })
            .collect();
        tops.sort_by_key(|t| std::cmp::Reverse(t.0));
        // Only resources with utilization are ordered against the load (Pacemaker's
        // utilization constraints).
        let ris: Vec<usize> = tops
            .into_iter()
            .flat_map(|(_, m)| m)
            .filter(|&ri| !obs.resources[ri].utilization.is_empty())
            .collect();
        for ri in ris {
            let allowed = by_name
                .iter()
                .copied()
                .filter(|ni| obs.symmetric || desired.scores[ri].contains_key(ni));
            let nodes: Vec<usize> = obs.resources[ri]
                .running_on
                .iter()
                .copied()
                .chain(allowed)
                .collect();
            for ni in nodes {
                if load_stopped[ni].is_none() {
                    let mut a = act(Kind::LoadStopped, None, Some(ni));
                    a.pseudo = true;
                    load_stopped[ni] = Some(plan.add(a));
                }
            }
        }
    }
}

/// Probes, node-major: the (resource, probe) pairs that order (drawn-only ones are not).
fn add_probes(
    obs: &Observed,
    desired: &Desired,
    rec: &Reconciliation,
    plan: &mut Plan,
) -> Vec<(usize, usize)> {
    let mut probe_ids: Vec<(usize, usize)> = Vec::new();
    for &(ri, ni) in &rec.probes {
        let mut probe = act(Kind::Probe, Some(ri), Some(ni));
        // Nothing runs on a pending node.
        probe.runnable = !obs.nodes[ni].pending;
        // A bundle connection's probe waits for its container's start (see `crate::bundles`).
        if crate::bundles::probe_waits_unrunnable(obs, &desired.assigned, ri) {
            probe.runnable = false;
            probe.dot_only = true;
        }
        probe_ids.push((ri, plan.add(probe)));
    }
    for &(ri, ni) in &rec.drawn_probes {
        let mut probe = act(Kind::Probe, Some(ri), Some(ni));
        probe.runnable = false;
        probe.dot_only = true;
        plan.add(probe);
    }
    probe_ids
}

/// Unfencings, created by Pacemaker as the probes and starts ask for them (ordered below).
fn add_unfencing(rec: &Reconciliation, plan: &mut Plan) -> Vec<(usize, usize)> {
    let mut unfence_ids: Vec<(usize, usize)> = Vec::new();
    for u in &rec.unfence {
        let mut a = act(Kind::Unfence, None, Some(u.node));
        a.reason = u.reason.clone();
        // Pacemaker creates the unfencing with the probes and starts, before the fencing of
        // unclean nodes: older than every fencing (the graph lists it after them).
        a.created_at = Some(0);
        unfence_ids.push((u.node, plan.add(a)));
    }
    unfence_ids
}

/// An orphan's fail counts are cleared on every online node (before its stop).
fn orphan_failcount_clears(
    obs: &Observed,
    desired: &Desired,
    plan: &mut Plan,
) -> Vec<(usize, usize)> {
    let mut orphan_clears: Vec<(usize, usize)> = Vec::new();
    if obs
        .option("stop-orphan-resources")
        .map(crate::cib::is_true)
        .unwrap_or(true)
    {
        for (ri, r) in obs.resources.iter().enumerate() {
            // An unmanaged orphan's clearing is optional: not in the graph.
            if !r.orphan || desired.unmanaged[ri] {
                continue;
            }
            for (ni, n) in obs.nodes.iter().enumerate() {
                if n.online
                    && crate::observed::node_failcount(&n.attrs, &r.id, r.legacy_fail_counts).0 != 0
                {
                    orphan_clears
                        .push((ri, plan.add(act(Kind::ClearFailcount, Some(ri), Some(ni)))));
                }
            }
        }
    }
    orphan_clears
}

/// Cancels of active Stopped-role monitors where the resource will run; the resource's
/// start waits for them.
fn stopped_monitor_cancels(
    obs: &Observed,
    desired: &Desired,
    rec: &Reconciliation,
    plan: &mut Plan,
) -> Vec<(usize, usize)> {
    let mut before_starts: Vec<(usize, usize)> = Vec::new();
    for (ri, r) in obs.resources.iter().enumerate() {
        if desired.unmanaged[ri] {
            continue;
        }
        let Some(target) = desired.assigned[ri] else {
            continue;
        };
        for a in &r.stopped_monitors {
            if a.node == target && !matches!(rec.changes[ri], Change::Stop { .. }) {
                let cancel = plan.add(act(
                    Kind::Cancel {
                        interval_ms: a.interval_ms,
                        call_id: None,
                    },
                    Some(ri),
                    Some(a.node),
                ));
                before_starts.push((ri, cancel));
            }
        }
    }
    before_starts
}

pub fn build(obs: &Observed, desired: &Desired, rec: &Reconciliation) -> Plan {
    let mut plan = Plan {
        order: desired.order.clone(),
        ..Default::default()
    };
    clone_nodes_and_abandoned_migrations(obs, desired, rec, &mut plan);
    let Fencing {
        ids: fence_ids,
        concurrent,
        others,
    } = add_fencing(obs, rec, &mut plan);
    // History erased where a shutdown lock expired (found while unpacking).
    for (ri, r) in obs.resources.iter().enumerate() {
        for &ni in &r.clear_history_on {
            plan.add(act(Kind::LrmDelete, Some(ri), Some(ni)));
        }
    }
    let fenced = |ni: usize| {
        rec.fence.iter().any(|(f, _)| *f == ni) || rec.guest_fence.iter().any(|g| g.node == ni)
    };
    let mut load_stopped: Vec<Option<usize>> = vec![None; obs.nodes.len()];
    let after_stops = maintenance_cancels(obs, &mut plan);
    // Fail-count clears found while unpacking. A clear for changed parameters on a node where
    // the resource stops follows that stop (Pacemaker creates the stop first).
    let stops_on = |ri: usize, ni: usize| match &rec.changes[ri] {
        Change::Stop { sources, .. } => sources.contains(&ni),
        Change::Move { stops, .. } | Change::Recover { stops, .. } => stops.contains(&ni),
        Change::Restart { node, .. } => *node == ni,
        _ => false,
    };
    // Actions of the configuration check, created before the fail-count clears: recurring
    // monitors rescheduled because their parameters changed (where the resource stays or starts
    // again), then the start of a restart or the reload that applies a definition change.
    // The configuration check cleans up an orphan's history on each node that can run
    // resources (unless the orphan failed; an unmanaged one's clean-up is optional): after its
    // stop there. (Only top-level orphans: not an orphaned instance of a clone of a group.)
    let mut deletes: Vec<(usize, usize)> = Vec::new();
    for (ri, r) in obs.resources.iter().enumerate() {
        if !r.orphan || r.failed || !r.managed || crate::clone_groups::clone_of(obs, ri).is_some() {
            continue;
        }
        for (ni, n) in obs.nodes.iter().enumerate() {
            let history = r.known_on.contains(&ni) || r.running_on.contains(&ni);
            // (Pacemaker checks the histories of the nodes available to run resources: not
            // one shutting down, such as the guest node of an orphaned connection)
            let available = n.online && !n.unclean && !n.standby && !n.shutdown;
            if history && available && !n.maintenance && !n.pending {
                deletes.push((ri, plan.add(act(Kind::Delete, Some(ri), Some(ni)))));
            }
        }
    }
    let mut early_monitors: BTreeMap<(usize, usize, u64), usize> = BTreeMap::new();
    let mut early_starts: BTreeMap<usize, usize> = BTreeMap::new();
    let mut early_stops: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    // A changed agent (see `Resource::agent_changed_on`): where the resource restarts, the
    // check requires its stop, then cleans the history up (not for a failed resource); the
    // clean-ups where it is not active follow the fail-count clears found while unpacking.
    let mut agent_deletes: Vec<(usize, usize)> = Vec::new();
    for (ri, r) in obs.resources.iter().enumerate() {
        if desired.unmanaged[ri] {
            continue;
        }
        for &ni in &r.agent_changed_on {
            if !matches!(rec.changes[ri], Change::Restart { node, .. } if node == ni) {
                continue;
            }
            early_stops.insert((ri, ni), plan.add(act(Kind::Stop, Some(ri), Some(ni))));
            if !r.failed {
                agent_deletes.push((ri, plan.add(act(Kind::Delete, Some(ri), Some(ni)))));
            }
        }
    }
    for (ri, r) in obs.resources.iter().enumerate() {
        if desired.unmanaged[ri] {
            continue;
        }
        let Some(ni) = desired.assigned[ri] else {
            continue;
        };
        let runs_there = match &rec.changes[ri] {
            Change::Start { blocked, .. } => blocked.is_none(),
            Change::Move { .. } | Change::Recover { .. } | Change::Restart { .. } => true,
            Change::Keep => r.running_on.contains(&ni) && r.managed,
            _ => false,
        };
        if !runs_there {
            continue;
        }
        for iv in monitors_for(obs, desired, ri) {
            if r.rescheduled.contains(&(ni, iv)) {
                let m = plan.add(act(Kind::Monitor { interval_ms: iv }, Some(ri), Some(ni)));
                early_monitors.insert((ri, ni, iv), m);
            }
        }
        match &rec.changes[ri] {
            Change::Restart { node, .. } if r.definition_restart.contains(node) => {
                early_starts.insert(ri, plan.add(act(Kind::Start, Some(ri), Some(*node))));
            }
            Change::Keep if r.reload_on.contains(&ni) && !r.failed && !r.start_pending() => {
                early_starts.insert(ri, plan.add(act(Kind::Reload, Some(ri), Some(ni))));
            }
            // A reload cannot apply to a start still pending: the check requires the stop.
            Change::Restart { node, .. } if r.reload_on.contains(node) && r.start_pending() => {
                early_stops.insert(
                    (ri, *node),
                    plan.add(act(Kind::Stop, Some(ri), Some(*node))),
                );
                if r.clear_failcount_changed.contains(node) {
                    plan.add(act(Kind::ClearFailcount, Some(ri), Some(*node)));
                }
            }
            _ => {}
        }
    }
    // A definition restart's clear comes with the check that found the change, before the
    // stop; other clears on a node where the resource stops follow that stop.
    let early_clear = |ri: usize, ni: usize| {
        early_starts.contains_key(&ri) && obs.resources[ri].definition_restart.contains(&ni)
    };
    for (ri, r) in obs.resources.iter().enumerate() {
        for &ni in &r.clear_failcount_on {
            let c = plan.add(act(Kind::ClearFailcount, Some(ri), Some(ni)));
            // A connection's clear with a reconnect interval waits for its node's fencing
            // (`order_after_remote_fencing`).
            if obs.stonith_enabled && crate::remote::reconnect_interval_ms(r) > 0 {
                let fenced = rec
                    .fence
                    .iter()
                    .zip(&fence_ids)
                    .find(|((fn_, _), _)| obs.nodes[*fn_].uname == r.id);
                if let Some((_, &f)) = fenced {
                    plan.edge(f, c);
                }
            }
        }
        // An unmanaged resource's clear is optional (not in the graph).
        if !r.managed || r.blocked {
            continue;
        }
        for &ni in &r.clear_failcount_changed {
            if !stops_on(ri, ni) || early_clear(ri, ni) {
                plan.add(act(Kind::ClearFailcount, Some(ri), Some(ni)));
            }
        }
    }
    // Active recurring monitors of the history are created here by Pacemaker (before the unpack
    // stops); the monitors below that reuse one take this position.
    let unpack_mark = plan.actions.len();
    plan.unpack_mark = unpack_mark;
    // An active recurring monitor of the history on a remote node the resource is not assigned
    // to is optional there, but the connection's required start implies it
    // (`apply_remote_ordering`, which `remote::order_actions` applies): it runs there once the
    // connection is back. An orphan's stays unrunnable (bundle-replicas-change: DOT draws it).
    for (ri, r) in obs.resources.iter().enumerate() {
        if desired.unmanaged[ri] {
            continue;
        }
        for &(ni, iv) in &r.unpacked_recurring {
            if Some(ni) != desired.assigned[ri]
                && crate::remote::connection_restarts(obs, &rec.changes, ni)
            {
                let mut a = act(Kind::Monitor { interval_ms: iv }, Some(ri), Some(ni));
                a.created_at = Some(unpack_mark);
                a.runnable = !r.orphan;
                plan.add(a);
            }
        }
    }
    for (ri, r) in obs.resources.iter().enumerate() {
        if desired.unmanaged[ri] || r.failed {
            continue;
        }
        for &ni in &r.agent_changed_on {
            if !early_stops.contains_key(&(ri, ni)) {
                agent_deletes.push((ri, plan.add(act(Kind::Delete, Some(ri), Some(ni)))));
            }
        }
    }
    // The stop of a failed copy that recovers is created while the history is unpacked
    // (before the probes); the resource's own actions below reuse it.
    let mut unpack_stops: BTreeMap<(usize, usize), usize> = early_stops;
    // A Stopped-role monitor active in the history where the resource runs exists since the
    // history was unpacked (before that node's stop); the stop there makes it required.
    let mut unpack_stopped_monitors: BTreeMap<(usize, usize, u64), usize> = BTreeMap::new();
    let will_run = |ri: usize| match &rec.changes[ri] {
        Change::Stop { .. } => None,
        Change::Start {
            blocked: Some(_), ..
        } => None,
        _ => desired.assigned[ri],
    };
    for (ri, r) in obs.resources.iter().enumerate() {
        // A failure with on-fail=demote: the demote there (`promotable::add_role_actions`
        // orders it) is created while the history is unpacked.
        if crate::reconcile::recovers_by_demotion(r) && !desired.unmanaged[ri] {
            for &ni in &r.unpack_demotes {
                plan.add(act(Kind::Demote, Some(ri), Some(ni)));
            }
        }
        for &ni in &r.unpack_stops {
            if stops_on(ri, ni) && !fenced(ni) && !unpack_stops.contains_key(&(ri, ni)) {
                let n = &obs.nodes[ni];
                if !desired.unmanaged[ri]
                    && Some(ni) != will_run(ri)
                    && n.online
                    && !n.unclean
                    && !n.pending
                    && r.running_on.contains(&ni)
                {
                    for iv in stopped_monitors(obs, ri) {
                        if r.recurring
                            .iter()
                            .any(|a| a.node == ni && a.interval_ms == iv)
                        {
                            let kind = Kind::StoppedMonitor { interval_ms: iv };
                            let m = plan.add(act(kind, Some(ri), Some(ni)));
                            unpack_stopped_monitors.insert((ri, ni, iv), m);
                        }
                    }
                }
                unpack_stops.insert((ri, ni), plan.add(act(Kind::Stop, Some(ri), Some(ni))));
                if r.clear_failcount_changed.contains(&ni) && !early_clear(ri, ni) {
                    plan.add(act(Kind::ClearFailcount, Some(ri), Some(ni)));
                }
            }
        }
    }
    add_load_stopped(obs, desired, &mut plan, &mut load_stopped);
    let probe_ids = add_probes(obs, desired, rec, &mut plan);
    let unfence_ids = add_unfencing(rec, &mut plan);
    let orphan_clears = orphan_failcount_clears(obs, desired, &mut plan);
    let before_starts = stopped_monitor_cancels(obs, desired, rec, &mut plan);
    // Resource actions in processing order.
    let order = desired.order.clone();
    for t in &order {
        let members: Vec<usize> = match *t {
            Top::Primitive(ri) => vec![ri],
            Top::Group(gi) => obs.groups[gi].members.clone(),
        };
        for &ri in &members {
            let r = &obs.resources[ri];
            let stop_on = |plan: &mut Plan, ni: usize, reason: Option<String>| {
                let mut a = act(Kind::Stop, Some(ri), Some(ni));
                a.reason = reason;
                if fenced(ni) {
                    a.pseudo = true;
                } else if !obs.nodes[ni].online || crate::guest::host_unfenceable(obs, ni) {
                    // Nothing runs on a node that is down and will not be fenced (no quorum,
                    // no fencing device), nor on a guest whose host is: the stop is blocked.
                    a.runnable = false;
                }
                if let Some(&id) = unpack_stops.get(&(ri, ni)) {
                    plan.actions[id] = a;
                    return id;
                }
                let id = plan.add(a);
                if r.clear_failcount_changed.contains(&ni) && !early_clear(ri, ni) {
                    plan.add(act(Kind::ClearFailcount, Some(ri), Some(ni)));
                }
                id
            };
            // Recurring monitors rescheduled by the configuration check (created above).
            let rescheduled: Vec<(u64, usize)> = early_monitors
                .iter()
                .filter(|((r2, _, _), _)| *r2 == ri)
                .map(|(&(_, _, iv), &m)| (iv, m))
                .collect();
            let mut stop_ids: Vec<usize> = Vec::new();
            let mut start_id = None;
            let mut target_node = None;
            let mut dot_start: Option<usize> = None;
            // The start is optional (shown in the graph only): active monitors stay as they are.
            let mut optional_start = false;
            // A dangling migration's stop elsewhere is created before the resource's own
            // actions (Pacemaker's `pcmk__abort_dangling_migration` runs first): the graph
            // lists it after them (migrate-shutdown).
            let own_stops: Vec<usize> = match &rec.changes[ri] {
                Change::Stop { sources, .. } => sources.clone(),
                Change::Move { stops, .. } | Change::Recover { stops, .. } => stops.clone(),
                Change::Restart { node, .. } => vec![*node],
                _ => Vec::new(),
            };
            if !own_stops.is_empty() && !desired.unmanaged[ri] {
                for &ni in r.dangling_sources.iter().chain(&r.stops_forced) {
                    let exists = stop_ids.iter().any(|&i| plan.actions[i].node == Some(ni));
                    if !own_stops.contains(&ni) && !exists {
                        stop_ids.push(stop_on(&mut plan, ni, None));
                    }
                }
            }
            match &rec.changes[ri] {
                Change::Keep => {
                    if let Some(ni) = desired.assigned[ri] {
                        if r.running_on.contains(&ni) && r.managed {
                            target_node = Some(ni);
                            // Changed parameters an agent reload applies: the reload stands
                            // where a start would (after the probes, before the monitors).
                            if let Some(&reload) = early_starts.get(&ri) {
                                start_id = Some(reload);
                            } else if r.start_pending_on.contains(&ni) {
                                // A start still pending where the resource stays (on that
                                // node: a pending start elsewhere is no start here): Pacemaker
                                // keeps an optional start that the graph always shows (no
                                // summary line); recurring monitors order after it, and stay
                                // optional where they are active.
                                start_id = Some(plan.add(act(Kind::Start, Some(ri), Some(ni))));
                                optional_start = true;
                            }
                        }
                    }
                }
                Change::Start { target, blocked } => {
                    let mut a = act(Kind::Start, Some(ri), Some(*target));
                    if let Some(b) = blocked {
                        a.runnable = false;
                        a.reason = Some(b.clone()).filter(|b| !b.is_empty());
                        // The quorum policy makes the start unrunnable when it is created, so
                        // it is never made required.
                        a.optional = crate::reconcile::quorum_block(obs, ri).is_some();
                    }
                    start_id = Some(plan.add(a));
                    target_node = Some(*target);
                }
                Change::Stop {
                    sources, reason, ..
                } => {
                    for &s in sources {
                        stop_ids.push(stop_on(&mut plan, s, reason.clone()));
                    }
                    // An ordering whose first is this resource's start creates that start
                    // (with no node) when the resource has none; so does the inverse of a
                    // symmetrical "X stop then this stop", and a restart forced by a changed
                    // definition (Pacemaker creates the required start before it knows where).
                    // (A clone's or group's own ordering orders its pseudo actions, which
                    // always exist: no member or instance start is created for it. A
                    // container's implied ordering with what runs inside it creates nothing:
                    // Pacemaker names its actions by key. A one-or-more ordering names each
                    // instance's start, which it creates.)
                    let is_this = |id: &str| id == r.id;
                    let referenced = obs.orders.iter().any(|o| {
                        (o.first_action == "start"
                            && is_this(&o.first)
                            && !crate::container::is_implied_order(o))
                            || (o.then_action == "stop"
                                && o.symmetrical.unwrap_or(o.kind != "serialize")
                                && is_this(&o.then))
                    }) || rec
                        .one_or_more
                        .iter()
                        .any(|(x, _)| x.firsts.contains(&crate::one_or_more::Member::Rsc(ri)))
                        // (an orphaned container whose orphaned guest connection Pacemaker met
                        // first: that connection's "container start then connection start"
                        // creates the start before this resource's own stop-then-start
                        // ordering is applied, which then requires it)
                        || (r.orphan
                            && obs.resources[..ri].iter().any(|c| {
                                c.orphan && c.container == Some(ri) && c.remote_node.is_some()
                            }));
                    // (A failed remote connection held stopped by its reconnect interval gets
                    // no start at all.)
                    let to_stay_stopped = crate::remote::held_stopped(r);
                    if !desired.unmanaged[ri]
                        && ((!r.definition_restart.is_empty() && !to_stay_stopped)
                            || referenced
                            || desired.assigned[ri].is_some())
                    {
                        let mut a = act(Kind::Start, Some(ri), desired.assigned[ri]);
                        a.runnable = false;
                        a.dot_only = true;
                        let s = plan.add(a);
                        for &st in &stop_ids {
                            plan.edge(st, s);
                        }
                        if desired.assigned[ri].is_some() {
                            target_node = desired.assigned[ri];
                            dot_start = Some(s);
                        }
                    }
                }
                Change::Move {
                    source,
                    target,
                    stops,
                }
                | Change::Recover {
                    source,
                    target,
                    stops,
                } => {
                    // multiple-active=stop_unexpected: a multiply active resource that stays
                    // is stopped only on the other nodes; its start where it stays is a pseudo
                    // action.
                    let expected = matches!(rec.changes[ri], Change::Recover { .. })
                        && source == target
                        && stops.len() > 1
                        && r.meta
                            .get("multiple-active")
                            .is_some_and(|v| v.eq_ignore_ascii_case("stop_unexpected"));
                    // A start found pending in the history is created before anything
                    // else of the resource (Pacemaker's create_pending_start; 735).
                    let mut start = act(Kind::Start, Some(ri), Some(*target));
                    start.pseudo = expected;
                    if r.start_pending() {
                        start_id = Some(plan.add(start.clone()));
                    }
                    for &s in stops {
                        if expected && s == *target {
                            continue;
                        }
                        stop_ids.push(stop_on(&mut plan, s, None));
                    }
                    if start_id.is_none() {
                        start_id = Some(plan.add(start));
                    }
                    target_node = Some(*target);
                }
                Change::Restart { node, reason } => {
                    // A group member restarting because of an ordering (its stop is not
                    // required for its own sake) stops because the member before it stops.
                    let induced = reason
                        .as_deref()
                        .is_some_and(|r| r.starts_with("required "));
                    let previous = r
                        .group
                        .filter(|&gi| obs.groups[gi].clone.is_none())
                        .and_then(|gi| {
                            let m = &obs.groups[gi].members;
                            let i = m.iter().position(|&x| x == ri)?;
                            i.checked_sub(1).map(|p| m[p])
                        });
                    let stop_reason = previous
                        .filter(|&p| induced && !plan.stops(p).is_empty())
                        .map(|p| format!("required {} stop", obs.resources[p].id));
                    stop_ids.push(stop_on(&mut plan, *node, stop_reason));
                    start_id = Some(match early_starts.get(&ri) {
                        Some(&s) => s,
                        None => plan.add(act(Kind::Start, Some(ri), Some(*node))),
                    });
                    target_node = Some(*node);
                }
                Change::Migrate { source, target } => {
                    start_id = Some(plan.add(act(
                        Kind::Migrate {
                            source: *source,
                            target: *target,
                        },
                        Some(ri),
                        Some(*target),
                    )));
                    target_node = Some(*target);
                }
            }
            // The source of a dangling migration (migrate_from done, never stopped) and the
            // target of a migrate_to pending on a lost source still need their stop; the
            // resource's own change does not include it (no summary line).
            for &ni in r.dangling_sources.iter().chain(&r.stops_forced) {
                let exists = stop_ids.iter().any(|&i| plan.actions[i].node == Some(ni))
                    || matches!(rec.changes[ri], Change::Migrate { source, .. } if source == ni);
                if !exists && !desired.unmanaged[ri] {
                    stop_ids.push(stop_on(&mut plan, ni, None));
                }
            }
            if let Some(s) = start_id {
                for &st in &stop_ids {
                    plan.edge(st, s);
                }
            }
            // Recurring monitors on the target.
            if let Some(ni) = target_node {
                let runnable = start_id.map(|s| plan.actions[s].runnable).unwrap_or(true)
                    && dot_start.is_none();
                if !runnable {
                    // Required but unrunnable monitors are only drawn.
                    let from = start_id.or(dot_start);
                    // (a promoted instance stopping, whose start back here as Unpromoted is
                    // only drawn: that start's Unpromoted monitors, drawn too; no demote
                    // without a restart brings them)
                    let next = desired.next_roles.get(ri).copied().flatten();
                    let ivs = if dot_start.is_some()
                        && r.role == Role::Promoted
                        && next == Some(Role::Unpromoted)
                    {
                        crate::promotable::role_monitors(obs, ri, Role::Unpromoted)
                    } else {
                        monitors_for(obs, desired, ri)
                    };
                    for iv in ivs {
                        let mut a = act(Kind::Monitor { interval_ms: iv }, Some(ri), Some(ni));
                        a.runnable = false;
                        a.dot_only = true;
                        let m = plan.add(a);
                        if let Some(s) = from {
                            plan.edge(s, m);
                        }
                    }
                }
                if runnable {
                    for iv in monitors_for(obs, desired, ri) {
                        // (a promotable instance's recurring entry the history unpacks as
                        // active, whatever its status other than pending: promoted-6)
                        let active = r
                            .recurring
                            .iter()
                            .any(|a| a.node == ni && a.interval_ms == iv)
                            || (crate::promotable::is_instance(obs, ri)
                                && r.unpacked_recurring.contains(&(ni, iv)));
                        let early = rescheduled.iter().find(|(v, _)| *v == iv).map(|e| e.1);
                        let forced = r.expired_rescheduled.contains(&(ni, iv))
                            || early.is_some()
                            || crate::remote::connection_restarts(obs, &rec.changes, ni);
                        if (start_id.is_none() || optional_start) && active && !forced {
                            continue;
                        }
                        let m = match early {
                            Some(m) => m,
                            None => {
                                let mut a =
                                    act(Kind::Monitor { interval_ms: iv }, Some(ri), Some(ni));
                                if r.unpacked_recurring.contains(&(ni, iv)) {
                                    a.created_at = Some(unpack_mark);
                                }
                                plan.add(a)
                            }
                        };
                        if let Some(s) = start_id {
                            plan.edge(s, m);
                        }
                    }
                }
            }
            // Stopped-role monitors on every other node where the resource will not run.
            let stopped_ivs = stopped_monitors(obs, ri);
            if !stopped_ivs.is_empty() && !desired.unmanaged[ri] {
                let will_run = match &rec.changes[ri] {
                    Change::Stop { .. } => None,
                    Change::Start {
                        blocked: Some(_), ..
                    } => None,
                    _ => desired.assigned[ri],
                };
                for (ni, n) in obs.nodes.iter().enumerate() {
                    if Some(ni) == will_run || n.pending {
                        continue;
                    }
                    // On a node that is down or unclean it is created all the same, required
                    // and unrunnable (`recurring_op_for_inactive`): drawn only.
                    if !n.online || n.unclean {
                        for &iv in &stopped_ivs {
                            let mut a =
                                act(Kind::StoppedMonitor { interval_ms: iv }, Some(ri), Some(ni));
                            a.runnable = false;
                            a.dot_only = true;
                            plan.add(a);
                        }
                        continue;
                    }
                    for &iv in &stopped_ivs {
                        let active = r
                            .stopped_monitors
                            .iter()
                            .any(|a| a.node == ni && a.interval_ms == iv)
                            && !r.running_on.contains(&ni);
                        if active {
                            continue;
                        }
                        let m = match unpack_stopped_monitors.get(&(ri, ni, iv)) {
                            Some(&m) => m,
                            None => plan.add(act(
                                Kind::StoppedMonitor { interval_ms: iv },
                                Some(ri),
                                Some(ni),
                            )),
                        };
                        for &(pr, pid) in &probe_ids {
                            if pr == ri && plan.actions[pid].node == Some(ni) {
                                plan.edge(pid, m);
                            }
                        }
                        for &st in &stop_ids {
                            if plan.actions[st].node == Some(ni) {
                                plan.edge(st, m);
                            }
                        }
                    }
                }
            }
            if desired.unmanaged[ri] && target_node.is_none() {
                unmanaged_recurring(obs, &mut plan, ri, unpack_mark);
            }
            // A clone instance's probes are ordered before the clone's start (below).
            let in_clone = crate::clone_groups::clone_of(obs, ri).is_some();
            for &(pr, pid) in probe_ids.iter().filter(|_| !in_clone) {
                // A probe that cannot run keeps a resource active nowhere from starting; an
                // active one goes on as it is.
                if pr == ri && (plan.actions[pid].runnable || r.running_on.is_empty()) {
                    // The start only drawn (unrunnable where the resource is placed) too.
                    if let Some(s) = start_id.or(dot_start) {
                        plan.edge(pid, s);
                    }
                }
            }
            // Stops on fenced nodes wait for the fencing when the resource needs fencing (a
            // resource that needs only quorum, such as a fencing device, is stopped by the
            // fencing itself, without waiting for it).
            let waits = crate::reconcile::needs_fencing(obs, r);
            for &st in stop_ids.iter().filter(|_| waits) {
                if let Some(ni) = plan.actions[st].node {
                    if let Some(pos) = rec.fence.iter().position(|(f, _)| *f == ni) {
                        plan.edge(fence_ids[pos], st);
                    }
                }
            }
        }
        if let Top::Group(gi) = *t {
            group_actions(
                obs,
                desired,
                &mut plan,
                gi,
                rec.blocked_group_starts.contains(&gi),
                rec.asymmetric_blocked_group_starts.contains(&gi),
            );
            // Every probe of a clone's instances comes before the clone's start.
            // (A bundle's container probes: before its inner clone's start and their own
            // start, see `crate::bundles::order_actions`.)
            let bundle = obs.bundles.iter().any(|b| b.containers == gi);
            if obs.groups[gi].clone.is_some() && !bundle {
                if let Some(gstart) = plan.find_group(gi, &Kind::GroupStart) {
                    let members = &obs.groups[gi].members;
                    for &(pr, pid) in &probe_ids {
                        if members.contains(&pr) {
                            plan.edge(pid, gstart);
                        }
                    }
                }
            }
            // A member that needs fencing and stops on a fenced node orders that fencing
            // before the group's stop too (Pacemaker orders it before the top-level parent's,
            // `uber_parent`, which stops below a bundle: a container's is its own stop).
            let gstop = plan.find_group(gi, &Kind::GroupStop).filter(|_| !bundle);
            if let Some(gstop) = gstop {
                for &m in &obs.groups[gi].members {
                    if !crate::reconcile::needs_fencing(obs, &obs.resources[m]) {
                        continue;
                    }
                    for st in plan.stops(m) {
                        let Some(ni) = plan.actions[st].node else {
                            continue;
                        };
                        if let Some(pos) = rec.fence.iter().position(|(f, _)| *f == ni) {
                            plan.edge(fence_ids[pos], gstop);
                        }
                    }
                }
            }
        }
    }
    crate::bundles::order_actions(obs, &mut plan, &probe_ids);
    // Stops release load before starts consume it.
    if obs.placement_strategy != "default" {
        for i in 0..plan.actions.len() {
            let Some(ni) = plan.actions[i].node else {
                continue;
            };
            let Some(ls) = load_stopped[ni] else { continue };
            let uses_load = plan.actions[i]
                .rsc
                .is_some_and(|ri| !obs.resources[ri].utilization.is_empty());
            if !uses_load {
                continue;
            }
            let rsc_on =
                |ri: Option<usize>| ri.is_some_and(|r| obs.resources[r].running_on.contains(&ni));
            match plan.actions[i].kind {
                // Only a node the resource is active on waits for its stop (a stop ending a
                // dangling migration elsewhere releases no load, as in Pacemaker 2.1.5).
                Kind::Stop if rsc_on(plan.actions[i].rsc) => plan.edge(i, ls),
                Kind::Start => plan.edge(ls, i),
                Kind::Migrate { source, .. } => {
                    plan.edge(ls, i);
                    if let Some(src) = load_stopped[source] {
                        plan.edge_rel(i, src, Rel::Stop);
                    }
                }
                _ => {}
            }
        }
    }
    // Starts wait for every fencing: those of resources that need fencing, and the others'
    // where the fenced node may run them and their state there is unknown (they may be active
    // there).
    for (fi, &(fenced_node, _)) in rec.fence.iter().enumerate() {
        starts_after_fencing(obs, desired, &mut plan, fence_ids[fi], fenced_node);
    }
    // Unfencing before the probes and starts there of what it concerns, after the stops there
    // of what requires it.
    for &(ni, u) in &unfence_ids {
        for i in 0..plan.actions.len() {
            let a = &plan.actions[i];
            let Some(ri) = a.rsc.filter(|_| !a.dot_only) else {
                continue;
            };
            let r = &obs.resources[ri];
            if !crate::unfencing::concerns(obs, r) {
                continue;
            }
            match a.kind {
                Kind::Probe | Kind::Start if a.node == Some(ni) => plan.edge(u, i),
                Kind::Migrate { target, .. } if target == ni => plan.edge(u, i),
                Kind::Stop if a.node == Some(ni) && crate::unfencing::needs_unfencing(obs, r) => {
                    plan.edge(i, u)
                }
                _ => {}
            }
        }
    }
    // Ordering constraints.
    let inhibitions = {
        // (a clone whose start is required or cannot run changed when Pacemaker processed it)
        let changed = |g: usize| {
            plan.find_group(g, &Kind::GroupStart)
                .is_some_and(|i| !plan.actions[i].runnable || !plan.actions[i].optional)
        };
        crate::clones::inhibitions(obs, &desired.assigned, &rec.inhibited, &changed)
    };
    for oc in &obs_orders(obs) {
        apply_order(obs, &mut plan, oc, &inhibitions, &desired.assigned);
    }
    crate::guest::probes_skipped_orderings(obs, desired, rec, &mut plan);
    one_or_more_actions(obs, rec, &mut plan);
    // Shutdown after every stop on the node. A resource frozen by a failure (on-fail=block)
    // has a stop there too, required by the shutdown and unrunnable (it is unmanaged), so the
    // shutdown cannot run; maintenance (the resource's, the cluster's or the node's) leaves
    // the resource out.
    let mut shutdown_ids: Vec<(usize, usize)> = Vec::new();
    for &ni in &rec.shutdown {
        let mut shutdown = act(Kind::Shutdown, None, Some(ni));
        shutdown.runnable = obs.nodes[ni].maintenance
            || !obs.resources.iter().any(|r| {
                r.blocked
                    && !r.managed
                    && r.running_on.contains(&ni)
                    && !obs.maintenance_mode
                    && !r.meta_bool("maintenance", false)
            });
        let sd = plan.add(shutdown);
        shutdown_ids.push((ni, sd));
        for i in 0..plan.actions.len() {
            if plan.actions[i].dot_only {
                continue;
            }
            if plan.actions[i].node == Some(ni) && matches!(plan.actions[i].kind, Kind::Stop) {
                plan.edge(i, sd);
            }
            if let Kind::Migrate { source, .. } = plan.actions[i].kind {
                if source == ni {
                    plan.edge_rel(i, sd, Rel::Stop);
                }
            }
        }
    }
    // The DC shuts down last: after the other nodes' shutdowns and their fencing (each when
    // fencing runs concurrently, else the last of the chain), so that no other node shutting
    // down becomes DC.
    if let Some(&(_, dc_sd)) = shutdown_ids.iter().find(|(ni, _)| obs.nodes[*ni].is_dc) {
        for &(_, sd) in shutdown_ids.iter().filter(|&&(_, sd)| sd != dc_sd) {
            plan.edge_rel(sd, dc_sd, Rel::Optional);
        }
        if concurrent {
            for &o in &others {
                plan.edge_rel(o, dc_sd, Rel::Optional);
            }
        } else if let Some(&last) = others.last() {
            plan.edge_rel(last, dc_sd, Rel::Optional);
        }
    }
    // (every stop of the orphan before each clean-up: Pacemaker orders the resource's actions)
    for (ri, delete) in deletes {
        for stop in plan.stops(ri) {
            plan.edge(stop, delete);
        }
        // (and before any start of it: one drawn only, as it cannot run)
        let starts: Vec<usize> = (0..plan.actions.len())
            .filter(|&i| plan.actions[i].rsc == Some(ri) && plan.actions[i].kind == Kind::Start)
            .collect();
        for start in starts {
            plan.edge_rel(delete, start, Rel::Optional);
        }
    }
    // stop -> clean-up -> start (every start of the resource).
    // (every stop of the resource, on any node: Pacemaker orders the resource's stop actions)
    // (a required clean-up's orderings are optional: one that cannot run leaves the start)
    for (ri, delete) in agent_deletes {
        for stop in plan.stops(ri) {
            plan.edge(stop, delete);
        }
        // (a start that is only drawn as well: Pacemaker orders whatever start exists)
        let starts: Vec<usize> = (0..plan.actions.len())
            .filter(|&i| {
                let a = &plan.actions[i];
                a.rsc == Some(ri)
                    && (a.kind == Kind::Start
                        || (matches!(a.kind, Kind::Migrate { .. }) && !a.dot_only))
            })
            .collect();
        for start in starts {
            plan.edge_rel(delete, start, Rel::Optional);
        }
    }
    // (an optional ordering: a clear that cannot run leaves the stops runnable)
    for (ri, clear) in orphan_clears {
        for stop in plan.stops(ri) {
            plan.edge_rel(clear, stop, Rel::Optional);
        }
    }
    for (ri, cancel) in after_stops {
        for stop in plan.stops(ri) {
            plan.edge_rel(stop, cancel, Rel::Stop);
        }
    }
    for (ri, cancel) in before_starts {
        for start in plan.starts(ri) {
            plan.edge(cancel, start);
        }
    }
    // Actions on remote nodes against their connection's start and stop.
    crate::remote::order_actions(obs, desired, &mut plan);
    crate::promotable::add_role_actions(obs, desired, &mut plan);
    crate::promotable::add_standalone_demotes(obs, desired, &mut plan);
    for (fi, &(fenced_node, _)) in rec.fence.iter().enumerate() {
        demotes_after_fencing(obs, &mut plan, fence_ids[fi], fenced_node, false);
        promotes_after_fencing(obs, &mut plan, fence_ids[fi]);
    }
    crate::guest::order_role_actions(obs, &mut plan);
    // Orderings naming a promote or demote, now that those exist.
    for oc in &obs_orders(obs) {
        apply_role_order(obs, &mut plan, oc, &inhibitions, &desired.assigned);
    }
    crate::probe_restarts::order(obs, desired, &mut plan);
    crate::guest::fencing_actions(obs, desired, rec, &mut plan);
    crate::guest::drop_invalid_orderings(obs, &mut plan);
    // What needs neither quorum nor fencing (every action but a start or promote) cannot run on
    // a guest node whose host cannot be fenced (`update_resource_action_runnable`).
    for a in &mut plan.actions {
        let needs_nothing = !matches!(a.kind, Kind::Start | Kind::Promote);
        if needs_nothing
            && a.rsc.is_some()
            && !a.pseudo
            && a.node
                .is_some_and(|ni| crate::guest::host_unfenceable(obs, ni))
        {
            a.runnable = false;
        }
    }
    plan
}

/// The demotes on a fenced node that is offline or unclean (or of a failed resource) are
/// implied by the fencing (Pacemaker's `order_stop_vs_fencing`): pseudo actions, after the
/// fencing when the resource needs fencing or the node is a guest, unless it is bundled.
pub(crate) fn demotes_after_fencing(
    obs: &Observed,
    plan: &mut Plan,
    fence: usize,
    fenced_node: usize,
    guest: bool,
) {
    for i in 0..plan.actions.len() {
        let a = &plan.actions[i];
        let (Kind::Demote, Some(ri), Some(ni)) = (&a.kind, a.rsc, a.node) else {
            continue;
        };
        let (r, n) = (&obs.resources[ri], &obs.nodes[ni]);
        if ni != fenced_node || !r.managed || !(!n.online || n.unclean || r.failed) {
            continue;
        }
        plan.actions[i].pseudo = true;
        // (a bundled resource's demote waits for its parent's implied stop instead:
        // `order_stop_vs_fencing`)
        if crate::bundles::is_bundled(obs, ri) {
            continue;
        }
        if guest || crate::reconcile::needs_fencing(obs, r) {
            plan.edge_rel(fence, i, Rel::Optional);
        }
    }
}

/// Orders the promotes of resources that need fencing after fencing `fence` (Pacemaker's
/// `order_start_vs_fencing`: a promote needs what the start needs).
pub(crate) fn promotes_after_fencing(obs: &Observed, plan: &mut Plan, fence: usize) {
    for i in 0..plan.actions.len() {
        let a = &plan.actions[i];
        let (Kind::Promote, Some(ri)) = (&a.kind, a.rsc) else {
            continue;
        };
        if !a.dot_only && crate::reconcile::needs_fencing(obs, &obs.resources[ri]) {
            plan.edge(fence, i);
        }
    }
}

/// Orders the starts after fencing `fence` of `fenced_node` (Pacemaker's
/// `order_start_vs_fencing`): those of resources that need fencing, and the others' where the
/// fenced node may run them and their state there is unknown (they may be active there).
pub(crate) fn starts_after_fencing(
    obs: &Observed,
    desired: &Desired,
    plan: &mut Plan,
    fence: usize,
    fenced_node: usize,
) {
    for s in 0..plan.actions.len() {
        let a = &plan.actions[s];
        let (Kind::Start | Kind::Migrate { .. }, Some(ri)) = (&a.kind, a.rsc) else {
            continue;
        };
        let migrates = matches!(a.kind, Kind::Migrate { .. });
        let r = &obs.resources[ri];
        // (an anonymous clone's primitive instance is known where any instance is)
        let sibling_known = r.clone_base.is_some()
            && r.group.is_some_and(|g| {
                obs.groups[g].clone.is_some()
                    && obs.groups[g]
                        .members
                        .iter()
                        .any(|&m| obs.resources[m].known_on.contains(&fenced_node))
            });
        // (a bundle's guest node is in the allowed nodes of few resources: see
        // `bundles::guest_node_allowed`)
        let allowed = crate::bundles::guest_node_allowed(obs, ri, fenced_node)
            .unwrap_or_else(|| obs.symmetric || desired.scores[ri].contains_key(&fenced_node));
        let unknown_there = !r.known_on.contains(&fenced_node) && !sibling_known && allowed;
        let needs_fencing = crate::reconcile::needs_fencing(obs, r);
        // (A start that requires nothing waits for no fencing.)
        let unknown_there = unknown_there && !crate::reconcile::start_requires_nothing(obs, r);
        if migrates {
            // A migration's (pseudo) start waits as a start would; its migrate_to (or the
            // migrate_from continuing it) needs what the start needs.
            if needs_fencing || unknown_there {
                plan.edge_rel(fence, s, Rel::StopStart);
            }
            // (its own edge: `edge` would take it for the start's, already there; not for
            // the migrate_from continuing a partial migration, which the atomic model records
            // before any fencing)
            if needs_fencing
                && r.partial_migration.is_none()
                && !plan.edges.contains(&(fence, s, Rel::Plain))
            {
                plan.edges.push((fence, s, Rel::Plain));
            }
        } else if needs_fencing || unknown_there {
            plan.edge(fence, s);
        }
    }
}

fn group_actions(
    obs: &Observed,
    desired: &Desired,
    plan: &mut Plan,
    gi: usize,
    blocked_start: bool,
    asymmetric_blocked: bool,
) {
    let members = obs.groups[gi].members.clone();
    // A group's members are chained (unless `ordered` is false); a clone's instances only
    // when it is `ordered`.
    let chained = obs.groups[gi].chained();
    let is_group = obs.groups[gi].clone.is_none();
    let mut starts: Vec<Vec<usize>> = members.iter().map(|&m| plan.starts(m)).collect();
    let mut stops: Vec<Vec<usize>> = members.iter().map(|&m| plan.stops(m)).collect();
    // What the group's start and stop lead to (`starts`, `stops`) and what its running and
    // stopped follow: each member's start or stop, or for a clone of a group each instance's
    // pseudo actions (the instances' own actions added first).
    let mut start_exits = Vec::new();
    let mut stop_exits = stops.clone();
    let instances = obs.groups[gi]
        .clone
        .as_ref()
        .map(|c| c.instances.clone())
        .unwrap_or_default();
    if !instances.is_empty() {
        for &ig in &instances {
            group_actions(obs, desired, plan, ig, blocked_start, false);
        }
        let pseudo = |plan: &Plan, kind: Kind| -> Vec<Vec<usize>> {
            instances
                .iter()
                .map(|&ig| plan.find_group(ig, &kind).into_iter().collect())
                .collect()
        };
        starts = pseudo(plan, Kind::GroupStart);
        start_exits = pseudo(plan, Kind::GroupRunning);
        stops = pseudo(plan, Kind::GroupStop);
        stop_exits = pseudo(plan, Kind::GroupStopped);
    }
    // A group action is required only when a member's is: member starts that are all
    // optional (blocked by the quorum policy from their creation) start nothing
    // (ordered-set-natural).
    let any_start = starts.iter().flatten().any(|&x| !plan.actions[x].optional);
    let any_stop = stops.iter().any(|s| !s.is_empty());
    let mut ids = [None; 4];
    // A group that stops but keeps members placed restarts: its start pseudo action follows.
    // (an unmanaged member's start is optional: it keeps nothing; a clone of groups and its
    // instances do not restart so: bug-lf-2422)
    let keeps_members = is_group
        && !crate::clone_groups::is_instance(obs, gi)
        && members
            .iter()
            .any(|&m| desired.assigned[m].is_some() && !desired.unmanaged[m])
        && members
            .iter()
            .any(|&m| obs.resources[m].target_role == Some(crate::observed::Role::Stopped));
    // The group's pseudo actions, added in this order (ids are creation order).
    let mut pseudo = |kind| {
        let mut a = act(kind, None, None);
        a.group = Some(gi);
        a.pseudo = true;
        Some(plan.add(a))
    };
    if any_start || (any_stop && keeps_members) {
        ids[0] = pseudo(Kind::GroupStart);
    }
    if any_start {
        ids[1] = pseudo(Kind::GroupRunning);
    }
    if any_stop {
        ids[2] = pseudo(Kind::GroupStop);
        ids[3] = pseudo(Kind::GroupStopped);
    }
    if let Some(gs) = ids[0].filter(|_| blocked_start) {
        plan.actions[gs].runnable = false;
    }
    // A chained group's member start that is required makes the next members' starts
    // required (the members' start ordering implies its then): a start the quorum policy
    // blocked from its creation is then required and drawn, unrunnable (group14).
    let mut late_starts = std::collections::BTreeSet::new();
    if is_group && chained {
        let mut required_before = false;
        for &m in &members {
            let own: Vec<usize> = (0..plan.actions.len())
                .filter(|&i| plan.actions[i].rsc == Some(m) && plan.actions[i].kind == Kind::Start)
                .collect();
            if required_before {
                for &x in &own {
                    let a = &mut plan.actions[x];
                    if a.optional && !a.runnable {
                        a.optional = false;
                        a.dot_only = true;
                    }
                }
                // A member that neither runs nor starts has a start all the same (Pacemaker
                // creates each member's start for its ordering before the group's running):
                // required, with no node, it cannot run, nor can the group's running
                // (bug-suse-707150: a disabled member after members that start).
                if own.is_empty() && obs.resources[m].running_on.is_empty() {
                    let mut a = act(Kind::Start, Some(m), None);
                    a.runnable = false;
                    a.dot_only = true;
                    late_starts.insert(plan.add(a));
                }
            }
            required_before |= own.iter().any(|&x| !plan.actions[x].optional);
        }
    }
    // Members whose start is required but cannot run (drawn only) make the group's start and
    // running required too (a group action is required when a member's is): both are drawn,
    // unrunnable, with the members' orderings.
    let dot_starts: Vec<Vec<usize>> = members.iter().map(|&m| plan.drawn_starts(m)).collect();
    // (A clone's start and running can run while one instance's start can: an instance
    // placed whose start is not drawn only; they are then in the graph.)
    let clone_runnable = !is_group
        && !blocked_start
        && members.iter().zip(&dot_starts).any(|(&m, d)| {
            let r = &obs.resources[m];
            (desired.assigned[m].is_some()
                && !desired.unmanaged[m]
                && d.is_empty()
                && plan.starts(m).iter().all(|&x| plan.actions[x].runnable))
                || (desired.unmanaged[m] && !r.running_on.is_empty() && !r.blocked)
        });
    // A clone's start (and running) can run only while one instance's start can
    // (Pacemaker sums its instances' flags).
    if !is_group && !clone_runnable {
        for id in [ids[0], ids[1]].into_iter().flatten() {
            plan.actions[id].runnable = false;
        }
    }
    let starts = if !any_start && dot_starts.iter().any(|s| !s.is_empty()) {
        for (slot, kind) in [(0, Kind::GroupStart), (1, Kind::GroupRunning)] {
            let id = match ids[slot] {
                // A group's start that already exists (the group restarts around a disabled
                // member) keeps its own runnable flag: Pacemaker makes a group action
                // unrunnable for an unrunnable member action of another task only
                // (running, not start; group11).
                Some(_) if is_group && slot == 0 => continue,
                Some(id) => id,
                // A group's start keeps its own runnable flag (Pacemaker makes a group
                // action unrunnable for an unrunnable member action of another task only):
                // required, it is in the graph unless an ordering blocks it (group14).
                None if is_group && slot == 0 => {
                    let mut a = drawn_group_pseudo(kind, gi);
                    a.dot_only = blocked_start;
                    a.runnable = !blocked_start;
                    a.created_at = ids[2];
                    ids[slot] = Some(plan.add(a));
                    continue;
                }
                None => {
                    let mut a = drawn_group_pseudo(kind, gi);
                    a.dot_only = !clone_runnable;
                    // (Pacemaker creates a group's or clone's start and running before its
                    // stop and stopped, which the synapse order shows)
                    a.created_at = ids[2];
                    plan.add(a)
                }
            };
            plan.actions[id].runnable = clone_runnable;
            ids[slot] = Some(id);
        }
        dot_starts
    } else if !late_starts.is_empty() {
        // (the starts created above follow the member before them and lead to the group's
        // running; the group's start, ordered before starts that did not exist yet, is not
        // ordered before them: bug-suse-707150)
        starts
            .into_iter()
            .zip(&dot_starts)
            .map(|(mut s, d)| {
                s.extend(d.iter().filter(|x| late_starts.contains(x)));
                s
            })
            .collect()
    } else {
        starts
    };
    // An asymmetrical mandatory ordering whose first cannot run makes the group's start
    // required and unrunnable even when no member starts (Pacemaker 2.1.5 exempts only a
    // then already active where it starts, and a group's start has no node): drawn only
    // (bug-5014-GROUP-A-stopped-B-started; a clone's likewise: bug-5014-CLONE-A-stop-B-started).
    if asymmetric_blocked && ids[0].is_none() {
        ids[0] = Some(plan.add(drawn_group_pseudo(Kind::GroupStart, gi)));
    }
    // An active member frozen by a failure (on-fail=block) has a stop that cannot run: the
    // group is never stopped.
    let frozen = members.iter().any(|&m| {
        let r = &obs.resources[m];
        r.blocked && !r.managed && !r.running_on.is_empty()
    });
    // (A clone is stopped whatever its instances' stops.)
    if let Some(gd) = ids[3].filter(|_| frozen && is_group) {
        plan.actions[gd].runnable = false;
    }
    if instances.is_empty() {
        start_exits = starts.clone();
    }
    // (A bundle's running and stopped follow its containers only.)
    let bundle = obs.bundles.iter().any(|b| b.containers == gi);
    if let (Some(gs), Some(gr)) = (ids[0], ids[1]) {
        if !bundle {
            plan.edge_rel(gs, gr, Rel::Start);
        }
        let mut prev: Vec<usize> = Vec::new();
        let inner_clone = crate::bundles::bundle_of_child(obs, gi).is_some();
        for (s, e) in starts.iter().zip(&start_exits) {
            for &x in s {
                if !late_starts.contains(&x) {
                    plan.edge_rel(gs, x, Rel::Start);
                }
                for &p in &prev {
                    plan.edge_rel(p, x, Rel::Start);
                }
            }
            for &x in e {
                // (an instance start that cannot run leaves a clone's running runnable)
                let rel = if !is_group && (plan.actions[x].dot_only || !plan.actions[x].runnable) {
                    Rel::Optional
                } else {
                    Rel::Start
                };
                plan.edge_rel(x, gr, rel);
            }
            if !s.is_empty() && chained {
                prev = e.clone();
            } else if !is_group && !inner_clone {
                // An ordered clone's instance that does not start orders nothing across it:
                // its start, created optional for the chain, is not in the graph
                // (unfence-definition).
                prev.clear();
            }
            // (a bundle's inner clone, which Pacemaker always makes ordered, chains the starts
            // that are not optional past an instance that does not start:
            // `child_ordering_constraints`)
        }
    }
    // A group that starts gives each member with no start and no node a start that cannot
    // run: Pacemaker creates it as the first of "member start then group running", so the
    // group's running cannot run (required, drawn only). The member before it orders it, and
    // it the member after it, unless it is disabled (promoted-pseudo, bug-suse-707150,
    // promoted-probed-score).
    if let (true, false, Some(gs), Some(gr)) = (is_group, bundle, ids[0], ids[1]) {
        if !plan.actions[gs].dot_only && !plan.actions[gr].dot_only {
            let mut any = false;
            let mut prev: Vec<usize> = Vec::new();
            for &m in &members {
                let has_start = (0..plan.actions.len()).any(|i| {
                    let a = &plan.actions[i];
                    a.rsc == Some(m) && matches!(a.kind, Kind::Start | Kind::Migrate { .. })
                });
                if has_start || desired.unmanaged[m] || desired.assigned[m].is_some() {
                    prev = plan.starts(m);
                    continue;
                }
                let disabled = obs.resources[m].target_role == Some(crate::observed::Role::Stopped);
                let mut a = act(Kind::Start, Some(m), None);
                a.runnable = false;
                a.dot_only = true;
                let x = plan.add(a);
                if chained && !disabled {
                    for &p in &prev {
                        plan.edge_rel(p, x, Rel::Start);
                    }
                }
                plan.edge_rel(x, gr, Rel::Start);
                prev = if disabled { Vec::new() } else { vec![x] };
                any = true;
            }
            if any {
                plan.actions[gr].runnable = false;
                plan.actions[gr].dot_only = true;
            }
        }
    }
    if let (Some(gs), Some(gd)) = (ids[2], ids[3]) {
        if !bundle {
            plan.edge_rel(gs, gd, Rel::GroupStop);
        }
        let mut prev: Vec<usize> = Vec::new();
        for (s, e) in stops.iter().zip(&stop_exits).rev() {
            for &x in s {
                plan.edge_rel(gs, x, Rel::GroupStop);
                for &p in &prev {
                    // (an ordered clone's chain is optional: an instance stop that cannot run
                    // leaves the next one runnable)
                    let rel = if !is_group && !plan.actions[p].runnable {
                        Rel::Optional
                    } else {
                        Rel::GroupStop
                    };
                    plan.edge_rel(p, x, rel);
                }
            }
            for &x in e {
                plan.edge_rel(x, gd, Rel::GroupStop);
            }
            if !s.is_empty() && chained {
                prev = e.clone();
            }
        }
        // (A bundle's start does not wait for its stopped: `pcmk__bundle_internal_constraints`.)
        if let Some(gstart) = ids[0].filter(|_| !bundle) {
            plan.edge_rel(gd, gstart, Rel::Optional);
        }
    }
    // Later members that stop before earlier ones restart: member i+1 stop before member i stop is covered above.
    let _ = plan.find_group(gi, &Kind::GroupStart);
    // Each "X stop then Y" ordering of the group (member i+1 stop then member i stop; member
    // stop then group stopped) also orders X's probes before Y.
    for (i, &m) in members.iter().enumerate() {
        if let Some(gd) = ids[3] {
            probes_before(plan, m, &[gd]);
        }
        if i > 0 && chained {
            let previous_stops = plan.stops(members[i - 1]);
            probes_before(plan, m, &previous_stops);
            // "member stop then previous member stop" is a restart ordering: a member frozen
            // by a failure blocks the stop of the member before it, which gives the reason.
            block_after_blocked_stop(obs, plan, &obs.resources[m].id, &previous_stops, true);
        }
    }
}

/// A mandatory ordering whose first action is the stop of a resource frozen by a failure
/// (on-fail=block: unmanaged, its stop cannot run) blocks the actions it orders. A restart
/// ordering (`restart`: a group's member stops) also says why ("unrunnable FIRST stop"),
/// unless the action has a reason already.
fn block_after_blocked_stop(
    obs: &Observed,
    plan: &mut Plan,
    first: &str,
    thens: &[usize],
    restart: bool,
) {
    let frozen = |ri: usize| obs.resources[ri].blocked && !obs.resources[ri].managed;
    let is_frozen = match obs.group_index(first) {
        Some(gi) => obs.groups[gi].members.iter().any(|&m| frozen(m)),
        None => obs.rsc_index(first).is_some_and(frozen),
    };
    if is_frozen {
        for &t in thens {
            plan.actions[t].runnable = false;
            if restart && plan.actions[t].reason.is_none() {
                plan.actions[t].reason = Some(format!("unrunnable {first} stop"));
            }
        }
    }
}

/// Whether an ordering's first `ri` runs inside its then, whose action is a stop: its probes
/// are not ordered before that stop (Pacemaker's `order_first_probes`: the probe would come
/// after the container starts again).
fn inside_stopping_container(obs: &Observed, ri: usize, then: &str, then_action: &str) -> bool {
    then_action == "stop"
        && obs.resources[ri]
            .container
            .is_some_and(|k| Some(k) == obs.rsc_index(then))
}

/// Orders every probe of `rsc` before each of `thens` (Pacemaker does so for each ordering
/// whose first action is a stop of `rsc`: the "then" side must not act on a stale picture).
fn probes_before(plan: &mut Plan, rsc: usize, thens: &[usize]) {
    for p in plan.find(rsc, &Kind::Probe) {
        for &t in thens {
            if t != p && !matches!(plan.actions[t].kind, Kind::Shutdown) {
                plan.edge(p, t);
            }
        }
    }
}

/// An ordering constraint resolved against the model.
struct OrderRef {
    first: String,
    then: String,
    first_action: String,
    then_action: String,
    symmetrical: bool,
    mandatory: bool,
    /// `kind="Optional"` (not serialize, not an anti-colocation).
    kind_optional: bool,
    /// The stop-before-start ordering of a mandatory anti-colocation: Pacemaker keeps it (and
    /// the probe orderings it implies) only between actions on the same node.
    anti_colocation: bool,
    /// The forward direction goes through a one-or-more pseudo action (`one_or_more_actions`).
    relaxed: bool,
}

fn obs_orders(obs: &Observed) -> Vec<OrderRef> {
    obs.orders
        .iter()
        .map(|o| OrderRef {
            first: o.first.clone(),
            then: o.then.clone(),
            first_action: o.first_action.clone(),
            then_action: o.then_action.clone(),
            symmetrical: o.symmetrical.unwrap_or(o.kind != "serialize"),
            mandatory: o.kind == "mandatory",
            kind_optional: o.kind == "optional",
            anti_colocation: o.kind == "anti-colocation",
            relaxed: crate::one_or_more::name_of(obs, o).is_some(),
        })
        .collect()
}

fn actions_for(obs: &Observed, plan: &Plan, id: &str, task: &str, as_first: bool) -> Vec<usize> {
    if let Some(gi) = obs.group_index(id) {
        let kind = match (task, as_first) {
            ("start", true) => Kind::GroupRunning,
            ("start", false) => Kind::GroupStart,
            ("stop", true) => Kind::GroupStopped,
            ("stop", false) => Kind::GroupStop,
            ("promote", true) => Kind::GroupPromoted,
            ("promote", false) => Kind::GroupPromote,
            ("demote", true) => Kind::GroupDemoted,
            ("demote", false) => Kind::GroupDemote,
            _ => return vec![],
        };
        return plan.find_group(gi, &kind).into_iter().collect();
    }
    let Some(ri) = obs.rsc_index(id) else {
        return vec![];
    };
    match task {
        "start" => plan.starts(ri),
        "stop" => plan.stops(ri),
        "promote" => plan.find(ri, &Kind::Promote),
        "demote" => plan.find(ri, &Kind::Demote),
        _ => vec![],
    }
}

/// The task a symmetrical ordering's inverse names (start <-> stop, promote <-> demote).
fn inverse_task(task: &str) -> &str {
    match task {
        "start" => "stop",
        "stop" => "start",
        "promote" => "demote",
        "demote" => "promote",
        other => other,
    }
}

/// The orderings of an order constraint (and its symmetric inverse) that name a promote or a
/// demote: applied once the promotable clones' role actions exist.
fn apply_role_order(
    obs: &Observed,
    plan: &mut Plan,
    o: &OrderRef,
    inhibited: &crate::clones::Inhibitions,
    assigned: &[Option<usize>],
) {
    let role = |a: &str| matches!(a, "promote" | "demote");
    let inv = |a: &str| inverse_task(a).to_string();
    let rel = |a: &str, b: &str| match (a, b) {
        (_, "start") => Rel::Start,
        (_, "stop") => Rel::Stop,
        _ => Rel::Plain,
    };
    let mut pairs = vec![(
        o.first.as_str(),
        o.first_action.clone(),
        o.then.as_str(),
        o.then_action.clone(),
    )];
    if o.symmetrical {
        pairs.push((
            o.then.as_str(),
            inv(&o.then_action),
            o.first.as_str(),
            inv(&o.first_action),
        ));
    }
    // An asymmetric mandatory ordering after the promote of a promotable clone none of whose
    // instances stays active: that promote cannot run, so the then clone's start is required
    // and unrunnable (`handle_asymmetric_ordering`), drawn only.
    if !o.symmetrical && o.mandatory && o.first_action == "promote" && o.then_action == "start" {
        let inactive = obs.group_index(&o.first).is_some_and(|fg| {
            obs.groups[fg].clone.is_some()
                && obs.groups[fg].members.iter().all(|&m| {
                    plan.starts(m).is_empty()
                        && (obs.resources[m].running_on.is_empty() || !plan.stops(m).is_empty())
                })
        });
        if let Some(tg) = obs
            .group_index(&o.then)
            .filter(|&tg| inactive && obs.groups[tg].clone.is_some())
        {
            if plan.find_group(tg, &Kind::GroupStart).is_none() {
                plan.add(drawn_group_pseudo(Kind::GroupStart, tg));
            }
        }
    }
    for (pi, (first, fa, then, ta)) in pairs.into_iter().enumerate() {
        if !role(&fa) && !role(&ta) {
            continue;
        }
        let firsts = actions_for(obs, plan, first, &fa, true);
        let thens = actions_for(obs, plan, then, &ta, false);
        // (the forward direction of a mandatory ordering implies its then: a promotable clone
        // of groups passes that on to every instance's promote)
        let first_happens = firsts
            .iter()
            .any(|&f| plan.actions[f].runnable && !plan.actions[f].optional);
        if pi == 0
            && o.mandatory
            && ta == "promote"
            && first_happens
            && crate::clones::interleaved(obs, first, then, &ta).is_none()
        {
            if let Some(tg) = obs.group_index(then) {
                crate::promotable::require_instance_group_promotes(obs, plan, tg, assigned);
            }
        }
        for &f in &firsts {
            for &t in &thens {
                let other_node = matches!(
                    (plan.actions[f].node, plan.actions[t].node),
                    (Some(x), Some(y)) if x != y
                );
                if o.anti_colocation && other_node {
                    continue;
                }
                plan.edge_rel(f, t, rel(&fa, &ta));
            }
        }
        // (between two interleaved clones, each then instance's action also follows the first
        // instance's on its node: promote then start pairs `AdminDrbd:N_promote_0` with
        // `FilesystemGroup:N_start_0`, as `multi_update_interleave_actions`)
        if !o.relaxed && !o.anti_colocation {
            interleave_instances(
                obs,
                plan,
                first,
                &fa,
                then,
                &ta,
                o.mandatory,
                inhibited,
                assigned,
            );
        }
        // (a stop first orders its resource's probes before the then, as `apply_order`)
        if fa == "stop" && first != then {
            if let Some(ri) = obs.rsc_index(first) {
                probes_before(plan, ri, &thens);
            }
        }
    }
}

fn apply_order(
    obs: &Observed,
    plan: &mut Plan,
    o: &OrderRef,
    inhibited: &crate::clones::Inhibitions,
    assigned: &[Option<usize>],
) {
    let firsts = actions_for(obs, plan, &o.first, &o.first_action, true);
    let thens = actions_for(obs, plan, &o.then, &o.then_action, false);
    let rel = |a: &str, b: &str| match (a, b) {
        ("start", "start") => Rel::Start,
        ("stop", "stop") => Rel::Stop,
        ("stop", "start") => Rel::StopStart,
        _ => Rel::Plain,
    };
    let same_node =
        |plan: &Plan, a: usize, b: usize| match (plan.actions[a].node, plan.actions[b].node) {
            (Some(x), Some(y)) => x == y,
            _ => true,
        };
    // (an optional ordering whose first is a migration's stop orders nothing)
    let optional = o.kind_optional;
    let migrating_stop = |plan: &Plan, f: usize, task: &str| {
        task == "stop" && matches!(plan.actions[f].kind, Kind::Migrate { .. })
    };
    for &f in firsts.iter().filter(|_| !o.relaxed) {
        for &t in &thens {
            if o.anti_colocation && !same_node(plan, f, t) {
                continue;
            }
            if optional && migrating_stop(plan, f, &o.first_action) {
                plan.drawn_orderings.push((f, t));
                continue;
            }
            plan.edge_rel(f, t, rel(&o.first_action, &o.then_action));
        }
    }
    // (an ordering replaced by a one-or-more pseudo action draws nothing of its own)
    if !o.relaxed && o.first_action == "start" && o.then_action == "start" {
        let dot_starts = |id: &str| -> Vec<usize> {
            obs.rsc_index(id)
                .map(|ri| plan.drawn_starts(ri))
                .unwrap_or_default()
        };
        let all_firsts: Vec<usize> = firsts.iter().copied().chain(dot_starts(&o.first)).collect();
        let all_thens: Vec<usize> = thens.iter().copied().chain(dot_starts(&o.then)).collect();
        for &f in &all_firsts {
            for &t in &all_thens {
                if plan.actions[f].dot_only || plan.actions[t].dot_only {
                    plan.dot_orderings.push((f, t));
                }
            }
        }
    }
    if !o.relaxed {
        let pairs = interleave_instances(
            obs,
            plan,
            &o.first,
            &o.first_action,
            &o.then,
            &o.then_action,
            o.mandatory,
            inhibited,
            assigned,
        );
        // A mandatory start ordering implies the then instance's start, so the first
        // instance's probes come before the then instance's stops (a restart), as Pacemaker
        // adds them for a probe's implied successors.
        if o.mandatory && o.first_action == "start" && o.then_action == "start" {
            for (f, t) in pairs {
                let (Some(fr), Some(tr)) = (plan.actions[f].rsc, plan.actions[t].rsc) else {
                    continue;
                };
                let stops: Vec<usize> = plan
                    .stops(tr)
                    .into_iter()
                    .filter(|&x| !plan.actions[x].pseudo)
                    .collect();
                probes_before(plan, fr, &stops);
            }
        }
    }
    if o.first_action == "stop" && o.first != o.then {
        if let Some(ri) = obs.rsc_index(&o.first) {
            if inside_stopping_container(obs, ri, &o.then, &o.then_action) {
            } else if o.anti_colocation {
                for p in plan.find(ri, &Kind::Probe) {
                    for &t in &thens {
                        if same_node(plan, p, t) && !matches!(plan.actions[t].kind, Kind::Shutdown)
                        {
                            plan.edge(p, t);
                        }
                    }
                }
            } else {
                probes_before(plan, ri, &thens);
            }
        }
        if o.mandatory {
            block_after_blocked_stop(obs, plan, &o.first, &thens, false);
        }
    }
    if o.symmetrical {
        let inv = |a: &str| inverse_task(a).to_string();
        let firsts = actions_for(obs, plan, &o.then, &inv(&o.then_action), true);
        let thens = actions_for(obs, plan, &o.first, &inv(&o.first_action), false);
        let r = rel(&inv(&o.then_action), &inv(&o.first_action));
        for &f in &firsts {
            for &t in &thens {
                if optional && migrating_stop(plan, f, &inv(&o.then_action)) {
                    plan.drawn_orderings.push((f, t));
                    continue;
                }
                plan.edge_rel(f, t, r);
            }
        }
        interleave_instances(
            obs,
            plan,
            &o.then,
            &inv(&o.then_action),
            &o.first,
            &inv(&o.first_action),
            o.mandatory,
            inhibited,
            assigned,
        );
        if inv(&o.then_action) == "stop" && o.first != o.then {
            if let Some(ri) = obs.rsc_index(&o.then) {
                // (a container that migrates still gets them before its migrate_to)
                let thens: Vec<usize> = thens
                    .iter()
                    .copied()
                    .filter(|&t| {
                        matches!(plan.actions[t].kind, Kind::Migrate { .. })
                            || !inside_stopping_container(obs, ri, &o.first, &inv(&o.first_action))
                    })
                    .collect();
                probes_before(plan, ri, &thens);
            }
            if o.mandatory {
                block_after_blocked_stop(obs, plan, &o.then, &thens, false);
            }
        }
    }
}

/// The one-or-more pseudo actions (see `crate::one_or_more`): one is in the graph when it is
/// runnable and some first start happens (Pacemaker prints it only then), after every first
/// start there (an optional ordering: an unrunnable first neither blocks it nor is its input)
/// and before its thens. Pacemaker creates it while unpacking constraints, before any
/// resource's action, so it is the oldest of the actions without a resource.
fn one_or_more_actions(obs: &Observed, rec: &Reconciliation, plan: &mut Plan) {
    for (r, runnable) in &rec.one_or_more {
        if !runnable {
            continue;
        }
        let mut firsts: Vec<usize> = r
            .firsts
            .iter()
            .flat_map(|&m| match m {
                crate::one_or_more::Member::Rsc(ri) => plan.starts(ri),
                crate::one_or_more::Member::Group(gi) => {
                    plan.find_group(gi, &Kind::GroupStart).into_iter().collect()
                }
            })
            .collect();
        // A never-placed instance's start drawn for an interleaved pairing
        // (`unplaced_instance_pairs`) is a first too: Pacemaker's per-instance ordering before
        // the pseudo action creates that start (`rsc_order_first`) before the clone's own
        // orderings are applied, so the clone's start is ordered before it as well.
        for &m in &r.firsts {
            let crate::one_or_more::Member::Rsc(ri) = m else {
                continue;
            };
            let drawn: Vec<usize> = plan
                .drawn_starts(ri)
                .into_iter()
                .filter(|&i| plan.actions[i].node.is_none())
                .collect();
            let clone_start = obs.resources[ri]
                .group
                .and_then(|g| plan.find_group(g, &Kind::GroupStart));
            for s in drawn {
                if let Some(cs) = clone_start {
                    plan.edge_rel(cs, s, Rel::Start);
                }
                firsts.push(s);
            }
        }
        if !firsts.iter().any(|&f| plan.actions[f].runnable) {
            continue;
        }
        let mut a = act(Kind::OneOrMore(r.name.clone()), None, None);
        a.pseudo = true;
        a.created_at = Some(0);
        let pseudo = plan.add(a);
        for f in firsts {
            plan.edge_rel(f, pseudo, Rel::Optional);
        }
        for (then, action) in &r.thens {
            for t in actions_for(obs, plan, then, action, false) {
                plan.edge_rel(pseudo, t, Rel::Start);
            }
        }
    }
}

/// An interleaved ordering between two clones (`clones::interleaved`) also orders each then
/// instance's start or stop after that of the first instance on the same node (drawn-only
/// actions too: Pacemaker orders the instances' actions whether or not they can run). Returns
/// the ordered (first, then) action pairs.
#[allow(clippy::too_many_arguments)] // the ordering's ends, plus what pairs instances
fn interleave_instances(
    obs: &Observed,
    plan: &mut Plan,
    first: &str,
    first_action: &str,
    then: &str,
    then_action: &str,
    mandatory: bool,
    inhibited: &crate::clones::Inhibitions,
    assigned: &[Option<usize>],
) -> Vec<(usize, usize)> {
    use crate::clones::Instance;
    let kind = |task: &str| match task {
        "start" => Some(Kind::Start),
        "stop" => Some(Kind::Stop),
        "promote" => Some(Kind::Promote),
        "demote" => Some(Kind::Demote),
        _ => None,
    };
    let (Some(fk), Some(tk)) = (kind(first_action), kind(then_action)) else {
        return vec![];
    };
    let Some((fg, tg)) = crate::clones::interleaved(obs, first, then, then_action) else {
        return vec![];
    };
    let rel = match (first_action, then_action) {
        ("start", "start") => Rel::Start,
        ("stop", "stop") => Rel::Stop,
        ("stop", "start") => Rel::StopStart,
        ("promote" | "demote", "start") => Rel::Start,
        ("promote" | "demote", "stop") => Rel::Stop,
        _ => Rel::Plain,
    };
    // (a first instance already unassigned when Pacemaker pairs the then clone's instances:
    // its start pairs with nothing; its stop, where it is active, does. A then instance
    // unassigned pairs on the node it was placed on, the best of its allowed nodes.)
    let out = |ri: usize, kind: &Kind, as_first: bool| {
        as_first && *kind == Kind::Start && inhibited.before((fg, tg), ri)
    };
    // An instance's actions for the task with their nodes: a primitive's own; an instance
    // group's running or stopped as a first, its start or stop as a then (on the node the
    // instance is placed on, or for a stop active on).
    let of = |plan: &Plan, u: Instance, kind: &Kind, as_first: bool| -> Vec<(usize, usize)> {
        match u {
            Instance::Rsc(ri) => (0..plan.actions.len())
                .filter(|&i| {
                    let a = &plan.actions[i];
                    a.rsc == Some(ri) && &a.kind == kind && !out(ri, kind, as_first)
                })
                .filter_map(|i| plan.actions[i].node.map(|n| (i, n)))
                .collect(),
            Instance::Group(ig) => {
                let members = &obs.groups[ig].members;
                let node = if *kind == Kind::Stop {
                    crate::clone_groups::instance_location(obs, members)
                } else if members.iter().any(|&m| out(m, kind, as_first)) {
                    None
                } else {
                    members.first().and_then(|&m| assigned[m])
                };
                let pseudo = match (kind, as_first) {
                    (Kind::Start, true) => Kind::GroupRunning,
                    (Kind::Start, false) => Kind::GroupStart,
                    (Kind::Stop, true) => Kind::GroupStopped,
                    (Kind::Stop, false) => Kind::GroupStop,
                    // (an instance group's promote or demote pairs nothing here)
                    _ => return vec![],
                };
                match (node, plan.find_group(ig, &pseudo)) {
                    (Some(n), Some(i)) => vec![(i, n)],
                    _ => vec![],
                }
            }
        }
    };
    let firsts: Vec<(usize, usize)> = crate::clones::instance_units(obs, fg)
        .into_iter()
        .flat_map(|u| of(plan, u, &fk, true))
        .collect();
    let mut pairs = Vec::new();
    for u in crate::clones::instance_units(obs, tg) {
        for (t, n) in of(plan, u, &tk, false) {
            if let Some(&(f, _)) = firsts.iter().find(|&&(_, m)| m == n) {
                plan.edge_rel(f, t, rel);
                pairs.push((f, t));
            }
        }
    }
    if fk == Kind::Start && tk == Kind::Start {
        unplaced_instance_pairs(obs, plan, (fg, tg), &firsts, mandatory, inhibited, assigned);
    }
    pairs
}

/// A then instance of an interleaved start ordering that has no node (never placed, or
/// unassigned for want of a first instance, `inhibited`, where no first instance is placed
/// on its former node) is paired as Pacemaker's
/// `find_compatible_child` pairs it: with the first instance placed on the first of its
/// allowed nodes that has one, the nodes sorted as `pcmk__sort_nodes` sorts them (all its
/// scores equal once it cannot be placed: fewest resources placed there, then name). A
/// never-placed instance's start, which Pacemaker creates optional for the clone's own
/// orderings, becomes required (drawn, unrunnable, no node) when a mandatory ordering pairs
/// it with a required first start.
fn unplaced_instance_pairs(
    obs: &Observed,
    plan: &mut Plan,
    (fg, tg): (usize, usize),
    firsts: &[(usize, usize)],
    mandatory: bool,
    inhibited: &crate::clones::Inhibitions,
    assigned: &[Option<usize>],
) {
    if firsts.is_empty()
        || obs.groups[tg]
            .clone
            .as_ref()
            .is_some_and(|c| !c.instances.is_empty())
    {
        return;
    }
    let mut count = vec![0usize; obs.nodes.len()];
    for (ri, a) in assigned.iter().enumerate() {
        if let Some(n) = a.filter(|_| !inhibited.all.contains(&ri)) {
            count[n] += 1;
        }
    }
    let mut nodes: Vec<usize> = (0..obs.nodes.len()).collect();
    nodes.sort_by(|&a, &b| {
        count[a]
            .cmp(&count[b])
            .then_with(|| obs.nodes[a].uname.cmp(&obs.nodes[b].uname))
    });
    // (the first instance found may have no start: then nothing is ordered)
    let located = |n: usize| {
        obs.groups[fg]
            .members
            .iter()
            .any(|&m| assigned[m] == Some(n) && !inhibited.before((fg, tg), m))
    };
    let Some(&n) = nodes.iter().find(|&&n| located(n)) else {
        return;
    };
    let Some(f) = firsts.iter().find(|&&(_, m)| m == n).map(|&(f, _)| f) else {
        return;
    };
    let mut running = plan.find_group(tg, &Kind::GroupRunning);
    // The previous instance's start made required here (an ordered clone chains them).
    let mut previous: Option<usize> = None;
    for &ri in &obs.groups[tg].members {
        // (an instance placed pairs on its node; one unassigned since, the best of its
        // allowed nodes, first there when a first instance is there)
        if let Some(n) = assigned[ri] {
            if !inhibited.all.contains(&ri) || firsts.iter().any(|&(_, m)| m == n) {
                continue;
            }
        }
        let starts: Vec<usize> = (0..plan.actions.len())
            .filter(|&i| plan.actions[i].rsc == Some(ri) && plan.actions[i].kind == Kind::Start)
            .collect();
        if starts.is_empty() {
            if !mandatory
                || plan.actions[f].optional
                || !obs.resources[ri].running_on.is_empty()
                || assigned[ri].is_some()
            {
                continue;
            }
            let mut a = act(Kind::Start, Some(ri), None);
            a.runnable = false;
            a.dot_only = true;
            let s = plan.add(a);
            plan.edge_rel(f, s, Rel::Start);
            // A clone none of whose instances starts still has its start and running (created
            // optional): the mandatory ordering after the first clone's running makes its
            // start required, and it cannot run with no instance start runnable; the
            // instances' starts lead to its running (Pacemaker's ordering of the clone's
            // start before an instance's start finds no start yet and orders nothing), and an
            // ordered clone chains them (clone-order-16instances).
            if running.is_none() {
                let gs = plan.add(drawn_group_pseudo(Kind::GroupStart, tg));
                let gr = plan.add(drawn_group_pseudo(Kind::GroupRunning, tg));
                plan.edge_rel(gs, gr, Rel::Start);
                if let Some(fr) = plan.find_group(fg, &Kind::GroupRunning) {
                    plan.edge_rel(fr, gs, Rel::Start);
                }
                running = Some(gr);
            }
            if let Some(r) = running {
                plan.edge_rel(s, r, Rel::Optional);
            }
            if let Some(p) = previous.filter(|_| obs.groups[tg].chained()) {
                plan.edge_rel(p, s, Rel::Optional);
            }
            previous = Some(s);
        } else {
            for s in starts {
                plan.edge_rel(f, s, Rel::Start);
            }
        }
    }
}

/// The indexes of `fence` (the fencing of cluster and remote nodes) in the order Pacemaker
/// creates their actions: those unpacking asked for first, in that order (`pe_fence_node`),
/// then those scheduling decided, by when (`fence_phase`) and in `fence`'s (node) order
/// (`schedule_fencing_and_shutdowns`).
pub fn fencing_creation_order(obs: &Observed, fence: &[(usize, String)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..fence.len()).collect();
    order.sort_by_key(|&k| {
        let ni = fence[k].0;
        let requested = obs.fence_requests.iter().position(|&r| r == ni);
        (obs.nodes[ni].fence_phase, requested.unwrap_or(usize::MAX))
    });
    order
}
