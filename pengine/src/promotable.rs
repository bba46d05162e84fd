//! Promotable clones (`<clone>` with meta `promotable=true`, or the legacy `<master>`) as
//! Pacemaker 2.1.5 schedules them: their options (`promoted-max`, `promoted-node-max` and the
//! legacy `master-max`, `master-node-max`), the roles of their instances, and the status lines
//! ("Promoted:", "Unpromoted:"). Placement of roles is `placement/promotable.rs`.

use std::collections::BTreeMap;

use crate::actions::{Action, Kind, Plan, Rel, act};
use crate::cib::{CloneDef, is_true};
use crate::graph::SummaryLine;
use crate::observed::{Observed, Role};
use crate::placement::Desired;
use crate::reconcile::{Change, Reconciliation};

/// What a promotable clone's meta attributes say about promotion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromotableSpec {
    /// `promoted-max` (legacy `master-max`): how many instances may be promoted (default 1).
    pub promoted_max: usize,
    /// `promoted-node-max` (legacy `master-node-max`): how many per node (default 1).
    pub promoted_node_max: usize,
}

/// A count option as Pacemaker reads it: 1 when unset, 0 when invalid or negative.
fn count_option(meta: &BTreeMap<String, String>, name: &str, legacy: &str) -> usize {
    match meta.get(name).or_else(|| meta.get(legacy)) {
        None => 1,
        Some(v) => v
            .trim()
            .parse::<i64>()
            .map(|n| n.max(0) as usize)
            .unwrap_or(0),
    }
}

/// The promotion options of clone `c` with merged meta `meta`, or `None` when it is not
/// promotable.
pub fn spec(c: &CloneDef, meta: &BTreeMap<String, String>) -> Option<PromotableSpec> {
    let promotable = c.legacy_master || meta.get("promotable").is_some_and(|v| is_true(v));
    promotable.then(|| PromotableSpec {
        promoted_max: count_option(meta, "promoted-max", "master-max"),
        promoted_node_max: count_option(meta, "promoted-node-max", "master-node-max"),
    })
}

/// Whether resource `ri` is an instance of a promotable clone (or a member of one).
pub fn is_instance(obs: &Observed, ri: usize) -> bool {
    crate::clone_groups::clone_of(obs, ri)
        .and_then(|gi| obs.groups[gi].clone.as_ref())
        .is_some_and(|c| c.promotable.is_some())
}

/// After unpacking: an instance of a promotable clone found running is shown and scheduled as
/// unpromoted (Pacemaker's "Started" is never a promotable instance's role).
pub fn settle_roles(obs: &mut Observed) {
    for ri in 0..obs.resources.len() {
        if obs.resources[ri].role == Role::Started && is_instance(obs, ri) {
            obs.resources[ri].role = Role::Unpromoted;
        }
    }
}

/// The label of a clone's list of active, not promoted instances: "Started", or for a
/// promotable clone "Unpromoted" (with "(target-role)" when its target role is Unpromoted).
pub fn started_label(g: &crate::observed::Group) -> &'static str {
    if g.clone.as_ref().is_none_or(|c| c.promotable.is_none()) {
        return "Started";
    }
    match g.meta.get("target-role").and_then(|t| Role::parse(t)) {
        Some(Role::Unpromoted) => "Unpromoted (target-role)",
        _ => "Unpromoted",
    }
}

/// The intervals of the resource's enabled recurring monitors for `role` (written as its
/// current or legacy name); two monitors with the same interval are duplicates Pacemaker
/// schedules neither of.
pub(crate) fn role_monitors(obs: &Observed, ri: usize, role: Role) -> Vec<u64> {
    obs.resources[ri]
        .ops
        .iter()
        .filter(|o| o.name == "monitor" && o.interval_ms > 0 && o.enabled)
        .filter(|o| !crate::actions::duplicated(obs, ri, o))
        // (a monitor without a role is an Unpromoted one)
        .filter(|o| match o.role.as_deref() {
            Some(r) => Role::parse(r) == Some(role),
            None => role == Role::Unpromoted,
        })
        .map(|o| o.interval_ms)
        .collect()
}

fn add(plan: &mut Plan, a: Action) -> usize {
    plan.actions.push(a);
    plan.actions.len() - 1
}

/// The clone's pseudo action of `kind` already in the plan.
fn clone_pseudo(plan: &Plan, gi: usize, kind: &Kind) -> Option<usize> {
    (0..plan.actions.len()).find(|&i| {
        let a = &plan.actions[i];
        a.group == Some(gi) && a.rsc.is_none() && &a.kind == kind
    })
}

/// Switches instance `ri`'s recurring monitors on node `ni` to role `to` after `after` (its
/// promote or demote): the other role's active monitors are cancelled, `to`'s are started
/// (unless `restarting`: the start's own monitors are already there).
fn monitors_for_role(
    obs: &Observed,
    plan: &mut Plan,
    ri: usize,
    ni: usize,
    to: Role,
    after: usize,
    restarting: bool,
) {
    let from = if to == Role::Promoted {
        Role::Unpromoted
    } else {
        Role::Promoted
    };
    let r = &obs.resources[ri];
    // A monitor the history unpacked as active is that action, now a cancel: it keeps its
    // unpack position (in the history's call order); another is created before the promote or
    // demote (older in the synapse order).
    let mut ivs = role_monitors(obs, ri, from);
    let unpacked_pos = |iv: u64| {
        r.unpacked_recurring
            .iter()
            .position(|&(n, v)| n == ni && v == iv)
    };
    ivs.sort_by_key(|&iv| unpacked_pos(iv).unwrap_or(usize::MAX));
    for iv in ivs {
        if r.recurring
            .iter()
            .any(|a| a.node == ni && a.interval_ms == iv && a.name == "monitor")
        {
            let cancel = add(
                plan,
                act(
                    // (a role change's cancel names no call)
                    Kind::Cancel {
                        interval_ms: iv,
                        call_id: None,
                    },
                    Some(ri),
                    Some(ni),
                ),
            );
            plan.actions[cancel].created_at = Some(match unpacked_pos(iv) {
                Some(_) => plan.unpack_mark,
                None => after,
            });
            plan.edge_rel(cancel, after, Rel::Plain);
        }
    }
    if restarting {
        return;
    }
    let starts_here = plan
        .starts(ri)
        .into_iter()
        .any(|s| plan.actions[s].node == Some(ni));
    for iv in role_monitors(obs, ri, to) {
        // An active monitor stays optional (not in the graph) while the resource does not
        // start there (a re-promote after on-fail=demote).
        if !starts_here && r.unpacked_recurring.contains(&(ni, iv)) {
            continue;
        }
        // (a monitor the start already scheduled is ordered after the promote too)
        let existing = plan
            .find(ri, &Kind::Monitor { interval_ms: iv })
            .into_iter()
            .find(|&m| plan.actions[m].node == Some(ni));
        let m = match existing {
            Some(m) => m,
            None => {
                let m = add(
                    plan,
                    act(Kind::Monitor { interval_ms: iv }, Some(ri), Some(ni)),
                );
                plan.actions[m].runnable = plan.actions[after].runnable;
                m
            }
        };
        plan.edge_rel(after, m, Rel::Plain);
        // (and after the start there)
        for s in plan.starts(ri) {
            if plan.actions[s].node == Some(ni) {
                plan.edge_rel(s, m, Rel::Plain);
            }
        }
    }
}

/// A primitive found promoted outside any promotable clone (an orphan whose history shows a
/// promote) goes through Unpromoted on its way to Stopped, as Pacemaker's role transitions do:
/// a demote on each node it runs on, created before its stops (older in the synapse order),
/// and every demote before every stop of it.
pub fn add_standalone_demotes(obs: &Observed, desired: &Desired, plan: &mut Plan) {
    for (ri, r) in obs.resources.iter().enumerate() {
        if r.role != Role::Promoted || !r.managed || desired.unmanaged[ri] || is_instance(obs, ri) {
            continue;
        }
        let stops = plan.stops(ri);
        let Some(&first_stop) = stops.iter().min() else {
            continue;
        };
        let mut demotes = Vec::new();
        for &ni in &r.running_on {
            let pseudo = stops
                .iter()
                .any(|&s| plan.actions[s].node == Some(ni) && plan.actions[s].pseudo);
            let d = add(plan, act(Kind::Demote, Some(ri), Some(ni)));
            plan.actions[d].pseudo = pseudo;
            plan.actions[d].created_at = Some(first_stop);
            demotes.push(d);
        }
        for d in demotes {
            for &s in &stops {
                plan.edge_rel(d, s, Rel::Plain);
            }
        }
    }
}

/// Adds the promotes and demotes of every promotable clone's instances the chosen roles need
/// (`Desired::next_roles`), the clone's promote/promoted and demote/demoted pseudo actions,
/// their orderings (demote before stop and promote, start before promote, the clone's running
/// before its promote, its demoted before its stop and start), and the role's monitors.
pub fn add_role_actions(obs: &Observed, desired: &Desired, plan: &mut Plan) {
    for (gi, g) in obs.groups.iter().enumerate() {
        if g.clone.as_ref().is_none_or(|c| c.promotable.is_none()) {
            continue;
        }
        let mut promotes = Vec::new();
        let mut demotes = Vec::new();
        for &ri in &g.members {
            let r = &obs.resources[ri];
            let Some(next) = desired.next_roles.get(ri).copied().flatten() else {
                continue;
            };
            let current = (r.running_on.len() == 1).then(|| r.running_on[0]);
            let target = desired.assigned.get(ri).copied().flatten();
            let stops_here: Vec<usize> = plan
                .stops(ri)
                .into_iter()
                .filter(|&s| plan.actions[s].node == current)
                .collect();
            let starts_there: Vec<usize> = plan
                .starts(ri)
                .into_iter()
                .filter(|&s| plan.actions[s].node == target)
                .collect();
            let mut demote = None;
            // (a failure with on-fail=demote required one while the history was unpacked)
            let unpacked = current.and_then(|c| {
                plan.find(ri, &Kind::Demote)
                    .into_iter()
                    .find(|&d| plan.actions[d].node == Some(c))
            });
            if let Some(c) = current.filter(|_| r.role == Role::Promoted && r.managed) {
                if !stops_here.is_empty()
                    || next != Role::Promoted
                    || target != Some(c)
                    || unpacked.is_some()
                {
                    // (a demote on a node being fenced: `actions::demotes_after_fencing`)
                    let pseudo = stops_here.iter().any(|&s| plan.actions[s].pseudo);
                    let d = match unpacked {
                        Some(d) => d,
                        None => add(plan, act(Kind::Demote, Some(ri), Some(c))),
                    };
                    plan.actions[d].pseudo = pseudo;
                    // (Pacemaker's role transitions create the demote before the stop: older
                    // in the synapse order)
                    if let Some(&first_stop) = stops_here.iter().min() {
                        if unpacked.is_none() {
                            plan.actions[d].created_at = Some(first_stop);
                        }
                    }
                    // (nothing runs on a node that is down and will not be fenced, nor on
                    // a guest whose host cannot be fenced: `update_resource_action_runnable`)
                    if !pseudo && (!obs.nodes[c].online || crate::guest::host_unfenceable(obs, c)) {
                        plan.actions[d].runnable = false;
                    }
                    for &s in &stops_here {
                        plan.edge_rel(d, s, Rel::Plain);
                    }
                    // (`recurring_op_for_active` cancels them while the start is optional when
                    // created: no stop, or a restart in place that only an ordering requires)
                    let restart_in_place = target == Some(c) && !r.failed;
                    if (stops_here.is_empty() || restart_in_place) && next == Role::Unpromoted {
                        let restarting = !stops_here.is_empty();
                        monitors_for_role(obs, plan, ri, c, Role::Unpromoted, d, restarting);
                    }
                    // (the monitors of a role other than Promoted follow the demote, wherever
                    // they are, those only drawn too)
                    if next != Role::Promoted {
                        for iv in role_monitors(obs, ri, Role::Unpromoted) {
                            let kind = Kind::Monitor { interval_ms: iv };
                            let monitors: Vec<usize> = (0..plan.actions.len())
                                .filter(|&m| {
                                    plan.actions[m].rsc == Some(ri) && plan.actions[m].kind == kind
                                })
                                .collect();
                            for m in monitors {
                                plan.edge_rel(d, m, Rel::Plain);
                            }
                        }
                    }
                    demotes.push(d);
                    demote = Some(d);
                }
            }
            if let (Role::Promoted, Some(t)) = (next, target) {
                let kept = r.role == Role::Promoted
                    && current == Some(t)
                    && stops_here.is_empty()
                    && starts_there.is_empty()
                    && demote.is_none();
                if !kept {
                    let p = add(plan, act(Kind::Promote, Some(ri), Some(t)));
                    // (and the promote right after the start, before the monitors)
                    if let Some(&start) = starts_there.iter().max() {
                        plan.actions[p].created_at =
                            Some(plan.actions[start].created_at.unwrap_or(start + 1));
                    }
                    for &s in &starts_there {
                        plan.edge_rel(s, p, Rel::Plain);
                        if !plan.actions[s].runnable {
                            plan.actions[p].runnable = false;
                        }
                    }
                    // A start the quorum policy blocks leaves the promote optional: Pacemaker
                    // creates none, so neither the clone's promote nor the graph has one
                    // (`promote_resource`: a start unrunnable when created; also the start
                    // only drawn of a resource stopping for want of quorum).
                    let drawn_start = plan.drawn_starts(ri).into_iter().any(|s| {
                        let a = &plan.actions[s];
                        a.node == target && !a.runnable
                    });
                    // So does a start an ordering made unrunnable where the promoted instance
                    // was to stay (only drawn; the instance stops): Pacemaker created its start
                    // and promote optional (`schedule_restart_actions` without need_stop) and
                    // nothing requires the promote.
                    let stays_unrunnable = drawn_start
                        && starts_there.is_empty()
                        && r.role == Role::Promoted
                        && current == Some(t)
                        && !r.failed
                        && r.definition_restart.is_empty();
                    let blocked = stays_unrunnable
                        || starts_there.iter().any(|&s| plan.actions[s].optional)
                        || (drawn_start && crate::reconcile::quorum_block(obs, ri).is_some());
                    if blocked {
                        plan.actions[p].optional = true;
                    }
                    if drawn_start {
                        plan.actions[p].runnable = false;
                    }
                    if let Some(d) = demote {
                        plan.edge_rel(d, p, Rel::Plain);
                    }
                    monitors_for_role(obs, plan, ri, t, Role::Promoted, p, false);
                    if !blocked {
                        promotes.push(p);
                    }
                }
            }
        }
        // An ordered clone promotes its instances one after another, and demotes them in the
        // reverse order (`order_instance_promotion`, `order_instance_demotion`).
        if g.clone.as_ref().is_some_and(|c| c.ordered) {
            let of = |plan: &Plan, ri: usize, kind: Kind| plan.find(ri, &kind);
            for w in g.members.windows(2) {
                for p in of(plan, w[0], Kind::Promote) {
                    for q in of(plan, w[1], Kind::Promote) {
                        plan.edge_rel(p, q, Rel::Optional);
                    }
                }
                for d in of(plan, w[1], Kind::Demote) {
                    for e in of(plan, w[0], Kind::Demote) {
                        plan.edge_rel(d, e, Rel::Optional);
                    }
                }
            }
        }
        // An instance of a clone of a group: its own promote/promoted and demote/demoted
        // between the clone's and its members' (`pcmk__group_internal_constraints`), members
        // promoted in order and demoted in reverse; the clone's then order the instances'.
        let mut instance_promotes = Vec::new();
        let mut instance_demotes = Vec::new();
        for &ig in g
            .clone
            .as_ref()
            .map(|c| c.instances.as_slice())
            .unwrap_or(&[])
        {
            let of = |list: &[usize]| -> Vec<usize> {
                obs.groups[ig]
                    .members
                    .iter()
                    .filter_map(|&m| {
                        list.iter()
                            .copied()
                            .find(|&a| plan.actions[a].rsc == Some(m))
                    })
                    .collect()
            };
            let (mine_d, mine_p) = (of(&demotes), of(&promotes));
            if !mine_d.is_empty() {
                let d = group_pseudo(plan, ig, Kind::GroupDemote);
                let dd = group_pseudo(plan, ig, Kind::GroupDemoted);
                for &x in &mine_d {
                    plan.edge_rel(d, x, Rel::Plain);
                    plan.edge_rel(x, dd, Rel::Plain);
                }
                instance_demotes.push((d, dd));
            }
            if !mine_p.is_empty() {
                let p = group_pseudo(plan, ig, Kind::GroupPromote);
                let pd = group_pseudo(plan, ig, Kind::GroupPromoted);
                for &x in &mine_p {
                    plan.edge_rel(p, x, Rel::Plain);
                    plan.edge_rel(x, pd, Rel::Plain);
                    if !plan.actions[x].runnable {
                        plan.actions[pd].runnable = false;
                    }
                }
                for w in mine_p.windows(2) {
                    plan.edge_rel(w[0], w[1], Rel::Plain);
                    if !plan.actions[w[0]].runnable {
                        plan.actions[w[1]].runnable = false;
                    }
                }
                instance_promotes.push((p, pd));
            }
        }
        // (what the clone's demote and promote come before, and what comes before its demoted
        // and promoted)
        let (demote_heads, demote_tails): (Vec<usize>, Vec<usize>) = if instance_demotes.is_empty()
        {
            (demotes.clone(), demotes.clone())
        } else {
            instance_demotes.iter().copied().unzip()
        };
        let (promote_heads, promote_tails): (Vec<usize>, Vec<usize>) =
            if instance_promotes.is_empty() {
                (promotes.clone(), promotes.clone())
            } else {
                instance_promotes.iter().copied().unzip()
            };
        role_pseudo_pairs(
            plan,
            gi,
            (!promotes.is_empty()).then_some((&promote_heads[..], &promote_tails[..])),
            (!demotes.is_empty()).then_some((&demote_heads[..], &demote_tails[..])),
        );
        if let Some(bi) = crate::bundles::bundle_of_child(obs, gi) {
            bundle_role_actions(plan, obs.bundles[bi].containers, gi);
        }
    }
}

/// A mandatory ordering whose first happens makes promotable clone `gi`'s promote required,
/// and without interleaving Pacemaker passes that on to each instance's promote that can run
/// (`pcmk__multi_update_actions`). An instance group's promote pseudo action can always run (a
/// member action of the same task never makes it unrunnable, `pcmk__group_action_flags`), so
/// one whose members are not promoted becomes required too: its members' promotes, created
/// without a node by the ordering into the instance's promoted (`rsc_order_first`), become
/// required but cannot run, and neither can the instance's promoted.
pub(crate) fn require_instance_group_promotes(
    obs: &Observed,
    plan: &mut Plan,
    gi: usize,
    assigned: &[Option<usize>],
) {
    let Some(clone_promote) = clone_pseudo(plan, gi, &Kind::GroupPromote) else {
        return;
    };
    let clone_promoted = clone_pseudo(plan, gi, &Kind::GroupPromoted);
    let instances = obs.groups[gi]
        .clone
        .as_ref()
        .filter(|c| c.promotable.is_some())
        .map(|c| c.instances.clone())
        .unwrap_or_default();
    for ig in instances {
        if clone_pseudo(plan, ig, &Kind::GroupPromote).is_some() {
            continue;
        }
        let p = group_pseudo(plan, ig, Kind::GroupPromote);
        let pd = group_pseudo(plan, ig, Kind::GroupPromoted);
        plan.actions[pd].runnable = false;
        plan.edge_rel(clone_promote, p, Rel::Plain);
        if let Some(d) = clone_pseudo(plan, ig, &Kind::GroupDemote) {
            plan.edge_rel(d, p, Rel::Optional);
        }
        let mut previous = None;
        for &m in &obs.groups[ig].members {
            let node = assigned.get(m).copied().flatten();
            let mut a = act(Kind::Promote, Some(m), node);
            a.runnable = false;
            a.dot_only = true;
            let x = add(plan, a);
            plan.edge_rel(p, x, Rel::Plain);
            plan.edge_rel(x, pd, Rel::Plain);
            if let Some(w) = previous {
                plan.edge_rel(w, x, Rel::Plain);
            }
            previous = Some(x);
        }
        if let Some(cpd) = clone_promoted {
            plan.edge_rel(pd, cpd, Rel::Optional);
        }
    }
}

/// A pseudo action of group `g` (a clone, an instance group or a bundle).
fn group_pseudo(plan: &mut Plan, g: usize, kind: Kind) -> usize {
    let mut a = act(kind, None, None);
    a.group = Some(g);
    a.pseudo = true;
    add(plan, a)
}

/// Group `g`'s (a clone's or a bundle's) own promote/promoted and demote/demoted pseudo actions
/// around `promote` and `demote` (each: what its first comes before, what comes before its
/// last; None: no such pair), the promote pair created first, with the promotable restart
/// ordering (`pcmk__promotable_restart_ordering`): demoted before its stop, its start and its
/// promote, running before promote, stopped before promote (optional).
fn role_pseudo_pairs(
    plan: &mut Plan,
    g: usize,
    promote: Option<(&[usize], &[usize])>,
    demote: Option<(&[usize], &[usize])>,
) {
    let pseudo = |plan: &mut Plan, kind: Kind| group_pseudo(plan, g, kind);
    let promote_pair = promote.map(|(heads, tails)| {
        (
            pseudo(plan, Kind::GroupPromote),
            pseudo(plan, Kind::GroupPromoted),
            heads,
            tails,
        )
    });
    let mut demoted = None;
    if let Some((heads, tails)) = demote {
        let d = pseudo(plan, Kind::GroupDemote);
        let dd = pseudo(plan, Kind::GroupDemoted);
        for &x in heads {
            plan.edge_rel(d, x, Rel::Plain);
        }
        for &x in tails {
            // (a demote that cannot run leaves the demoted runnable)
            let rel = if plan.actions[x].runnable {
                Rel::Plain
            } else {
                Rel::Optional
            };
            plan.edge_rel(x, dd, rel);
        }
        for kind in [Kind::GroupStop, Kind::GroupStart] {
            if let Some(t) = clone_pseudo(plan, g, &kind) {
                plan.edge_rel(dd, t, Rel::Optional);
            }
        }
        plan.edge_rel(d, dd, Rel::Optional);
        // (a clone action sums up its instances': when none of their demotes can run, neither
        // can the clone's demote and demoted, `summary_action_flags`)
        if !heads.is_empty() && heads.iter().all(|&x| !plan.actions[x].runnable) {
            plan.actions[d].runnable = false;
            plan.actions[dd].runnable = false;
        }
        demoted = Some(dd);
    }
    if let Some((p, pd, heads, tails)) = promote_pair {
        for &x in heads {
            plan.edge_rel(p, x, Rel::Plain);
        }
        for &x in tails {
            plan.edge_rel(x, pd, Rel::Plain);
        }
        if let Some(run) = clone_pseudo(plan, g, &Kind::GroupRunning) {
            plan.edge_rel(run, p, Rel::Plain);
        }
        if let Some(dd) = demoted {
            plan.edge_rel(dd, p, Rel::Optional);
        }
        if let Some(stopped) = clone_pseudo(plan, g, &Kind::GroupStopped) {
            plan.edge_rel(stopped, p, Rel::Optional);
        }
    }
}

/// A bundle's own promote/promoted and demote/demoted pseudo actions around those of its
/// promotable inner clone `ci` (`pcmk__bundle_create_actions`, required when the inner clone's
/// are), ordered as `pcmk__bundle_internal_constraints` orders them: the bundle's promote before
/// the clone's, the clone's promoted before the bundle's (demotes alike), with the restart
/// ordering of `role_pseudo_pairs`.
fn bundle_role_actions(plan: &mut Plan, bundle: usize, ci: usize) {
    let inner = |kind: Kind| clone_pseudo(plan, ci, &kind);
    let pair = |first: Kind, last: Kind| {
        inner(first).map(|f| (vec![f], inner(last).into_iter().collect::<Vec<usize>>()))
    };
    let promote = pair(Kind::GroupPromote, Kind::GroupPromoted);
    let demote = pair(Kind::GroupDemote, Kind::GroupDemoted);
    role_pseudo_pairs(
        plan,
        bundle,
        promote.as_ref().map(|(h, t)| (&h[..], &t[..])),
        demote.as_ref().map(|(h, t)| (&h[..], &t[..])),
    );
}

/// The role an instance has after the transition, as the plan says: Promoted when it is
/// promoted (or stays promoted: no demote, still placed), Stopped when it stops, else
/// Unpromoted.
fn next_role_in(obs: &Observed, plan: &Plan, rec: &Reconciliation, ri: usize) -> Role {
    let has = |k: Kind| !plan.find(ri, &k).is_empty();
    if has(Kind::Promote) {
        return Role::Promoted;
    }
    match &rec.changes[ri] {
        Change::Stop { .. } => Role::Stopped,
        _ if obs.resources[ri].role == Role::Promoted && !has(Kind::Demote) => Role::Promoted,
        _ => Role::Unpromoted,
    }
}

/// Rewrites the Transition Summary lines of promotable instance `ri` (those from `first` on)
/// with its roles, as crm_simulate prints them ("Promote", "Demote", roles in the details), and
/// adds the line of a role change without a start or stop.
pub fn role_summary(
    obs: &Observed,
    plan: &Plan,
    rec: &Reconciliation,
    ri: usize,
    lines: &mut Vec<SummaryLine>,
    first: usize,
) {
    let r = &obs.resources[ri];
    if !is_instance(obs, ri) {
        // (a primitive found promoted outside a clone: its stops name the role it leaves)
        if r.role == Role::Promoted {
            for l in lines[first..].iter_mut().filter(|l| l.verb == "Stop") {
                l.details = format!("{} {}", r.role.text(), l.details);
            }
        }
        return;
    }
    let current = match r.role {
        Role::Unknown => Role::Stopped,
        Role::Started => Role::Unpromoted,
        other => other,
    };
    let next = next_role_in(obs, plan, rec, ri);
    let need_role = current > Role::Started || next > Role::Unpromoted;
    if lines.len() == first {
        let node_of = |k: Kind| {
            plan.find(ri, &k)
                .first()
                .and_then(|&i| plan.actions[i].node)
                .map(|ni| obs.nodes[ni].uname.clone())
        };
        let line = if current == Role::Promoted && next == Role::Promoted {
            // demoted and promoted again where it is (on-fail=demote)
            if let Some(n) = node_of(Kind::Demote) {
                lines.push(SummaryLine {
                    verb: "Re-promote".into(),
                    rsc: r.id.clone(),
                    details: format!("{} {n}", current.text()),
                    reason: String::new(),
                });
            }
            return;
        } else if current == Role::Promoted {
            node_of(Kind::Demote).map(|n| ("Demote", n))
        } else if next == Role::Promoted {
            node_of(Kind::Promote).map(|n| ("Promote", n))
        } else {
            None
        };
        if let Some((verb, node)) = line {
            lines.push(SummaryLine {
                verb: verb.into(),
                rsc: r.id.clone(),
                details: format!("{} -> {} {node}", current.text(), next.text()),
                reason: String::new(),
            });
        }
        return;
    }
    for l in &mut lines[first..] {
        // A failed instance kept in its role (on-fail=demote leaves it failed) whose restart
        // something else requires is a recovery (`rsc_action_default`: role unchanged, start
        // required, failed).
        if l.verb == "Restart" && current == next && r.failed {
            l.verb = "Recover".into();
            l.reason = String::new();
        }
        match l.verb.as_str() {
            "Start" if next == Role::Promoted => {
                l.verb = "Promote".into();
                // (the line is the promote's, which a start blocked by the quorum policy
                // leaves without a reason)
                if plan
                    .find(ri, &Kind::Promote)
                    .iter()
                    .any(|&p| plan.actions[p].optional)
                {
                    l.reason = "blocked".into();
                }
                l.details = format!("{} -> {} {}", current.text(), next.text(), l.details);
            }
            "Stop" if need_role => {
                l.details = format!("{} {}", current.text(), l.details);
            }
            "Move" | "Recover" | "Restart" if need_role => {
                if let Some((source, target)) = l.details.split_once(" -> ") {
                    l.details = if current == next {
                        format!("{source} -> {target} {}", current.text())
                    } else {
                        format!("{} {source} -> {} {target}", current.text(), next.text())
                    };
                } else if current == next {
                    l.details = format!("{} {}", current.text(), l.details);
                } else {
                    l.details = format!("{} -> {} {}", current.text(), next.text(), l.details);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn promotion_counts_default_to_one_and_read_legacy_names() {
        let def = CloneDef::default();
        assert_eq!(spec(&def, &meta(&[])), None);
        let s = spec(&def, &meta(&[("promotable", "true")])).expect("promotable");
        assert_eq!((s.promoted_max, s.promoted_node_max), (1, 1));
        let legacy = CloneDef {
            legacy_master: true,
            ..CloneDef::default()
        };
        let s = spec(
            &legacy,
            &meta(&[("master-max", "2"), ("promoted-node-max", "x")]),
        )
        .expect("a <master> is promotable");
        assert_eq!((s.promoted_max, s.promoted_node_max), (2, 0));
        let s = spec(
            &legacy,
            &meta(&[("master-max", "2"), ("promoted-max", "-3")]),
        )
        .unwrap();
        assert_eq!(s.promoted_max, 0);
    }
}
