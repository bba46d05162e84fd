//! Roles of a promotable clone's instances as Pacemaker 2.1.5 chooses them once the instances
//! are placed: promotion scores (`master-<rsc>` node attributes) added to the instances'
//! preferences before placement, then each placed instance's promotion priority (its score,
//! locations with role Promoted), the clone's node weights (priorities, colocations with the
//! clone's Promoted role, tickets required for promotion), the instances sorted, and the first
//! `promoted-max` eligible ones promoted (`promoted-node-max` per node).

use std::collections::BTreeMap;

use super::{Ctx, node_available, same_attribute, unit_of};
use crate::cib::add_score;
use crate::cib::{INFINITY, parse_score};
use crate::observed::{NoQuorum, Observed, Role};
use crate::promotable::PromotableSpec;

/// A role named by a constraint, as Pacemaker reads it for role filters: Started (or none) is
/// no filter.
pub(crate) fn role_filter(role: Option<&str>) -> Option<Role> {
    role.and_then(Role::parse)
        .filter(|r| matches!(r, Role::Promoted | Role::Unpromoted | Role::Stopped))
}

/// Whether instance `ri`'s promotion score counts on node `ni` (`allowed`: its node scores):
/// it is active there, or no instance is active there and some instance was probed there, or
/// nothing is known of it anywhere, or it is known there; and the node is allowed.
fn score_applies(obs: &Observed, ri: usize, ni: usize, allowed: &BTreeMap<usize, i64>) -> bool {
    let r = &obs.resources[ri];
    let Some(gi) = r.group else {
        return false;
    };
    // (the same resource of every instance: the members at its place in each instance of
    // a clone of a group)
    let members = match crate::clone_groups::parent_clone(obs, gi) {
        Some(ci) => {
            let pos = obs.groups[gi].members.iter().position(|&m| m == ri);
            crate::clone_groups::instances(obs, ci)
                .iter()
                .filter_map(|u| pos.and_then(|p| u.get(p).copied()))
                .collect()
        }
        None => obs.groups[gi].members.clone(),
    };
    let active = members
        .iter()
        .copied()
        .find(|&m| obs.resources[m].running_on.contains(&ni));
    let applies = active == Some(ri)
        || (active.is_none()
            && members
                .iter()
                .any(|&m| obs.resources[m].known_on.contains(&ni)))
        || (r.running_on.is_empty() && r.known_on.is_empty())
        || r.known_on.contains(&ni)
        || r.running_on.contains(&ni);
    applies && allowed.get(&ni).is_some_and(|&w| w >= 0)
}

/// Instance `ri`'s promotion score on node `ni`: the node attribute `master-<name>` for the
/// name its history uses (else its own), then for the cloned primitive's name (on the
/// container's host instead, see `guest::attribute_node`). `None` when the
/// score does not apply there or no attribute is set.
fn promotion_score(
    obs: &Observed,
    ri: usize,
    ni: usize,
    allowed: &BTreeMap<usize, i64>,
) -> Option<i64> {
    if !score_applies(obs, ri, ni, allowed) {
        return None;
    }
    let r = &obs.resources[ri];
    let attrs = &obs.nodes[crate::guest::attribute_node(obs, ri, ni)?].attrs;
    let name = r.clone_name.as_deref().unwrap_or(&r.id);
    let value = attrs.get(&format!("master-{name}")).or_else(|| {
        let base = crate::clones::strip_instance(&r.id);
        (base != r.id)
            .then(|| attrs.get(&format!("master-{base}")))
            .flatten()
    })?;
    Some(parse_score(value).unwrap_or(0))
}

/// Adds each instance's positive promotion scores to its node scores (`scores[k]` for the
/// clone's k-th member) on available nodes, before the instances are placed. Returns each
/// instance's priority for the order instances are placed in: the clone's priority, raised to
/// the instance's highest promotion score on those nodes (`pcmk__add_promotion_scores`).
pub(super) fn add_promotion_scores(
    ctx: &Ctx,
    gi: usize,
    scores: &mut [BTreeMap<usize, i64>],
) -> (Vec<i64>, Vec<BTreeMap<usize, i64>>) {
    let obs = ctx.obs;
    let clone_priority = obs.groups[gi]
        .meta
        .get("priority")
        .and_then(|v| parse_score(v))
        .unwrap_or(0);
    let units = crate::clone_groups::instances(obs, gi);
    let group_instances = obs.groups[gi]
        .clone
        .as_ref()
        .is_some_and(|c| !c.instances.is_empty());
    let mut added = vec![BTreeMap::new(); units.len()];
    let mut priorities = vec![clone_priority; units.len()];
    for (k, unit) in units.iter().enumerate() {
        let Some(s) = scores.get(k).cloned() else {
            continue;
        };
        for (&ni, &w) in &s {
            if !node_available(obs, ni) {
                continue;
            }
            // (an instance of a clone of a group: the sum of its members' scores)
            let score = unit
                .iter()
                .filter_map(|&m| promotion_score(obs, m, ni, &s))
                .fold(0, add_score);
            if score > 0 && group_instances {
                // (an instance of a clone of a group: the group's own node scores, which
                // order the instances but leave its members' alone)
                added[k].insert(ni, score);
            } else if score > 0 {
                scores[k].insert(ni, add_score(w, score));
            }
            priorities[k] = priorities[k].max(score);
        }
    }
    (priorities, added)
}

/// The next role the configuration gives instance `ri` before roles are chosen: Stopped or
/// Unpromoted by `target-role` (Started and Promoted leave the choice open), or Stopped by a
/// failure's on-fail.
fn configured_next_role(obs: &Observed, ri: usize) -> Option<Role> {
    let r = &obs.resources[ri];
    if r.next_role == Some(Role::Stopped) {
        return Some(Role::Stopped);
    }
    // (an unmanaged instance keeps its role: Unpromoted after a demote or when a monitor
    // found it active, Started, which leaves the choice open, after a start)
    if !r.managed && r.role == Role::Unpromoted && r.unpromoted_at_unpack {
        return Some(Role::Unpromoted);
    }
    match r.meta.get("target-role").and_then(|t| Role::parse(t)) {
        Some(Role::Stopped) => Some(Role::Stopped),
        Some(Role::Unpromoted) => Some(Role::Unpromoted),
        _ => r.next_role.filter(|&n| n == Role::Unpromoted),
    }
}

/// Sum of the location constraints with role Promoted naming `ids` on node `ni`.
fn promoted_locations(ctx: &Ctx, ri: usize, ids: &[&str], ni: usize) -> i64 {
    let obs = ctx.obs;
    let r = &obs.resources[ri];
    let mut total = 0;
    for loc in ctx
        .cib
        .locations
        .iter()
        .filter(|l| ids.contains(&l.rsc.as_str()))
    {
        let loc_role = role_filter(loc.role.as_deref());
        if let Some(node) = &loc.node {
            if loc_role == Some(Role::Promoted) && obs.node_index(node) == Some(ni) {
                let s = loc.score.as_deref().and_then(parse_score).unwrap_or(0);
                total = add_score(total, s);
            }
            continue;
        }
        for rule in &loc.rules {
            let role = role_filter(rule.attr("role")).or(loc_role);
            if role != Some(Role::Promoted) {
                continue;
            }
            let attrs = &obs.nodes[ni].attrs;
            let rsc = crate::rules::RscData {
                params: &r.params,
                meta: &r.meta,
            };
            if !crate::rules::eval_rule(rule, attrs, obs.now, Some(rsc)) {
                continue;
            }
            let s = crate::rules::rule_score(rule, attrs);
            total = add_score(total, s);
        }
    }
    total
}

/// Whether a ticket the clone needs for its Promoted role is revoked or in standby.
fn promotion_ticket_missing(ctx: &Ctx, clone_id: &str) -> bool {
    ctx.cib.rsc_tickets.iter().any(|dep| {
        dep.rsc == clone_id
            && crate::tickets::dependency_role(dep.role.as_deref()) == Some(Role::Promoted)
            && ctx
                .cib
                .tickets
                .iter()
                .find(|t| t.id == dep.ticket)
                .is_none_or(|t| !t.granted || t.standby)
    })
}

/// The node instance `unit` (its resources) is placed on: the one node its placed members
/// share (`native_location` of the instance), None when none is placed or they are apart.
fn unit_location(ctx: &Ctx, unit: &[usize]) -> Option<usize> {
    let mut nodes: Vec<usize> = unit
        .iter()
        .filter_map(|&m| ctx.desired.assigned[m])
        .collect();
    nodes.dedup();
    match nodes[..] {
        [ni] => Some(ni),
        _ => None,
    }
}

/// An instance's promotion score on `ni`: its primitive's, or for an instance of a clone of a
/// group the sum of its members' (None when no member has one).
fn unit_promotion_score(ctx: &Ctx, unit: &[usize], ni: usize) -> Option<i64> {
    unit.iter()
        .filter_map(|&m| promotion_score(ctx.obs, m, ni, &ctx.desired.scores[m]))
        .reduce(add_score)
}

/// Chooses the roles of clone group `gi`'s placed instances (`pcmk__set_instance_roles`):
/// records each instance's next role (`Desired::next_roles`, every member of an instance of a
/// clone of a group alike) and promotion score line.
/// (`placed_order`: the instances in the order they were placed, which breaks ties.)
pub(super) fn set_roles(ctx: &mut Ctx, gi: usize, spec: &PromotableSpec, placed_order: &[usize]) {
    let obs = ctx.obs;
    let g = &obs.groups[gi];
    let units = crate::clone_groups::instances(obs, gi);
    let group_instances = g.clone.as_ref().is_some_and(|c| !c.instances.is_empty());
    let clone_id = g.id.as_str();
    let n = units.len();
    let chosen: Vec<Option<usize>> = units.iter().map(|u| unit_location(ctx, u)).collect();
    // (an instance's next role is the highest of its members': a member left unplaced in a
    // placed instance of a group makes it Stopped)
    let configured: Vec<Option<Role>> = units
        .iter()
        .map(|u| {
            u.iter()
                .find_map(|&m| configured_next_role(obs, m))
                .or_else(|| {
                    (group_instances && u.iter().any(|&m| ctx.desired.assigned[m].is_none()))
                        .then_some(Role::Stopped)
                })
        })
        .collect();
    let mut priority = vec![0i64; n];
    let mut sort_index = vec![0i64; n];
    let mut first_priority = vec![0i64; n];
    for (k, unit) in units.iter().enumerate() {
        let Some(ni) = chosen[k] else { continue };
        let ri = unit[0];
        priority[k] = match configured[k] {
            Some(_) => -INFINITY,
            None => unit_promotion_score(ctx, unit, ni).unwrap_or(-1),
        };
        let own_id = match obs.resources[ri].group {
            Some(ig) if group_instances => obs.groups[ig].id.as_str(),
            _ => obs.resources[ri].id.as_str(),
        };
        // (a bundle passes its locations for a role on to its inner clone:
        // `pcmk__bundle_rsc_location`)
        let bundle = crate::bundles::bundle_of_child(obs, gi).map(|bi| obs.bundles[bi].id.as_str());
        let ids: Vec<&str> = [own_id, clone_id].into_iter().chain(bundle).collect();
        priority[k] = add_score(priority[k], promoted_locations(ctx, ri, &ids, ni));
        // (an instance group passes the colocations on to its first member, whose own
        // priority they change: it must stay non-negative for the instance to be promoted)
        if group_instances {
            first_priority[k] = colocation_priority(ctx, gi, ni, 0);
        } else {
            priority[k] = colocation_priority(ctx, gi, ni, priority[k]);
        }
        sort_index[k] = priority[k];
    }
    // The clone's node weights: its own scores, each placed instance's priority on its node,
    // colocations of its Promoted role with resources already placed, required tickets.
    let mut weights = ctx.desired.group_scores[gi].clone();
    for k in 0..n {
        if let (Some(ni), true) = (chosen[k], sort_index[k] >= 0) {
            let w = weights.get(&ni).copied().unwrap_or(0);
            weights.insert(ni, add_score(w, sort_index[k]));
        }
    }
    super::members::add_promoted_primaries(ctx, gi, &mut weights);
    super::members::add_promoted_dependents(ctx, gi, &mut weights);
    if promotion_ticket_missing(ctx, clone_id) {
        for v in weights.values_mut() {
            *v = -INFINITY;
        }
    }
    ctx.role_weights[gi] = Some(weights.clone());
    let role = |k: usize| {
        units[k]
            .iter()
            .map(|&m| obs.resources[m].role)
            .max()
            .unwrap_or(Role::Unknown)
    };
    let active = |k: usize| {
        units[k]
            .iter()
            .any(|&m| !obs.resources[m].running_on.is_empty())
    };
    let failed = |k: usize| units[k].iter().any(|&m| obs.resources[m].failed);
    let managed = |k: usize| units[k].iter().all(|&m| obs.resources[m].managed);
    for k in 0..n {
        if !managed(k) && role(k) == Role::Promoted {
            sort_index[k] = INFINITY;
        } else if let (Some(ni), true) = (chosen[k], sort_index[k] >= 0) {
            sort_index[k] = weights.get(&ni).copied().unwrap_or(0);
        }
    }
    // Highest promotion priority first, then the higher current role, then active instances,
    // then those not failed (`pcmk__cmp_instance`), then in the order they were placed.
    let mut order: Vec<usize> = placed_order.to_vec();
    order.extend((0..n).filter(|k| !placed_order.contains(k)));
    order.sort_by_key(|&k| {
        (
            std::cmp::Reverse(sort_index[k]),
            std::cmp::Reverse(role(k)),
            !active(k),
            active(k) && failed(k),
        )
    });
    let clone_managed = g
        .meta
        .get("is-managed")
        .is_none_or(|v| crate::cib::is_true(v))
        && !obs.maintenance_mode;
    let mut per_node: BTreeMap<usize, usize> = BTreeMap::new();
    let mut promoted = 0usize;
    for k in order {
        let unit = &units[k];
        let ri = unit[0];
        let r = &obs.resources[ri];
        ctx.desired
            .promotion_scores
            .push((ri, chosen[k], sort_index[k]));
        let mut node = None;
        if sort_index[k] >= 0 && (promoted < spec.promoted_max || !clone_managed) {
            // (every member of an instance of a group must be promotable there too)
            let members_ok = !group_instances
                || first_priority[k] >= 0
                    && unit.iter().all(|&m| {
                        let mr = &obs.resources[m];
                        ctx.desired.assigned[m].is_some_and(|mn| node_available(obs, mn))
                            && (mr.managed || mr.role == Role::Promoted)
                    });
            node = chosen[k].filter(|&ni| {
                if !managed(k) {
                    return role(k) == Role::Promoted;
                }
                members_ok
                    && priority[k] >= 0
                    && node_available(obs, ni)
                    && guest_will_run(ctx, ni)
                    && weights.contains_key(&ni)
                    && per_node.get(&ni).copied().unwrap_or(0) < spec.promoted_node_max
            });
        }
        if node.is_some()
            && role(k) < Role::Promoted
            && !obs.have_quorum
            && obs.no_quorum_policy == NoQuorum::Freeze
        {
            node = None;
        }
        // no-quorum-policy=demote: an active instance keeps running but is not promoted
        // (once its actions are created; it still takes its promotion slot).
        let demoted_without_quorum = !obs.have_quorum
            && obs.no_quorum_policy == NoQuorum::Demote
            && matches!(r.role, Role::Promoted | Role::Unpromoted)
            && r.meta.get("requires").is_none_or(|v| v != "nothing");
        if let Some(ni) = node {
            *per_node.entry(ni).or_insert(0) += 1;
            promoted += 1;
        }
        for &m in unit {
            ctx.desired.next_roles[m] = Some(match node {
                Some(_) if demoted_without_quorum => Role::Unpromoted,
                Some(_) => Role::Promoted,
                None if ctx.desired.assigned[m].is_some() => Role::Unpromoted,
                None => Role::Stopped,
            });
        }
    }
}

/// The role a colocation's primary must have when that primary is a promotable clone already
/// placed (its roles chosen): `with-rsc-role` Promoted or Unpromoted. None: the colocation is
/// not role-specific (or the primary is no promotable clone), and counts as any other.
pub(super) fn primary_role_filter(ctx: &Ctx, c: &crate::cib::Colocation) -> Option<(usize, Role)> {
    let obs = ctx.obs;
    let super::Unit::Group(gi) = unit_of(obs, &c.with_rsc)? else {
        return None;
    };
    let g = &obs.groups[gi];
    if g.id != c.with_rsc || g.clone.as_ref()?.promotable.is_none() {
        return None;
    }
    let role = role_filter(c.with_rsc_role.as_deref())?;
    Some((gi, role))
}

/// What `dependent_with_promotable` needs of a colocation.
#[derive(Debug, Clone, Copy)]
pub(super) struct RoleColoc<'a> {
    pub score: i64,
    pub attr: Option<&'a str>,
    pub dependent_role: Option<Role>,
}

/// Applies a colocation of a dependent being placed with the instances of promotable clone
/// `gi` that take `role` (`pcmk__update_dependent_with_promotable`): an optional score is added
/// on the nodes alike to each such instance's; a mandatory one (unless both sides name the
/// Promoted role) bans every other node and adds the instance's own score on its node.
pub(super) fn dependent_with_promotable(
    ctx: &Ctx,
    gi: usize,
    role: Role,
    c: RoleColoc<'_>,
    scores: &mut BTreeMap<usize, i64>,
) {
    let obs = ctx.obs;
    let attr = c.attr;
    // (node, the instance's score there), last instance first as Pacemaker prepends them.
    let mut affected: Vec<(usize, i64)> = Vec::new();
    for &m in &obs.groups[gi].members {
        let Some(ni) = ctx.desired.assigned[m] else {
            continue;
        };
        if ctx.desired.next_roles[m] != Some(role) {
            continue;
        }
        if c.score < INFINITY {
            for (&dn, v) in scores.iter_mut() {
                if same_attribute(obs, attr, dn, ni) {
                    *v = add_score(*v, c.score);
                }
            }
        }
        // (an unmanaged instance stays on its current node, which carries the node's own
        // weight, not the instance's score there: `pcmk__primitive_assign`; unpacking took
        // an offline or shutting-down node's to -INFINITY)
        let w = if obs.resources[m].managed {
            ctx.desired.scores[m].get(&ni).copied().unwrap_or(0)
        } else if !obs.nodes[ni].online || obs.nodes[ni].shutdown {
            -INFINITY
        } else {
            obs.nodes[ni].weight
        };
        affected.insert(0, (ni, w));
    }
    if c.score >= INFINITY && (c.dependent_role != Some(Role::Promoted) || role != Role::Promoted) {
        for (&dn, v) in scores.iter_mut() {
            match affected.iter().find(|(ni, _)| *ni == dn) {
                None => *v = -INFINITY,
                Some(&(_, w)) => *v = add_score(*v, w),
            }
        }
        for &(ni, _) in &affected {
            scores.entry(ni).or_insert(-INFINITY);
        }
    }
}

/// Whether node `ni`, when a guest node, has its container assigned (an instance on a guest
/// whose container will not run cannot be promoted: `pcmk__node_available` with
/// `consider_guest`).
fn guest_will_run(ctx: &Ctx, ni: usize) -> bool {
    crate::guest::container_of(ctx.obs, ni).is_none_or(|ki| ctx.desired.assigned[ki].is_some())
}

/// An instance's promotion priority once the clone's colocations naming a role of the clone
/// (the instance's, as its parent passes them on: all when not every node gets an instance,
/// else mandatory and negative ones) are applied, the instance placed on `ni`
/// (`set_instance_priority`: `pcmk__update_promotable_dependent_priority` with a role of a
/// promotable primary, else `pcmk__apply_coloc_to_priority`).
fn colocation_priority(ctx: &Ctx, gi: usize, ni: usize, mut priority: i64) -> i64 {
    let obs = ctx.obs;
    let g = &obs.groups[gi];
    let Some(spec) = g.clone.as_ref() else {
        return priority;
    };
    let available = ctx.desired.group_scores[gi]
        .keys()
        .filter(|&&n| node_available(obs, n))
        .count();
    let all_coloc = spec.max < available;
    for c in ctx.cib.colocations.iter().filter(|c| c.rsc == g.id) {
        if c.score == 0 || !(all_coloc || c.score < 0 || c.score == INFINITY) {
            continue;
        }
        let dependent_role = role_filter(c.rsc_role.as_deref());
        let primary_role = role_filter(c.with_rsc_role.as_deref());
        let attr = c.node_attribute.as_deref();
        // (primary node, primary next role) pairs the colocation is checked against.
        let apply = |priority: i64, primary: Option<(usize, Option<Role>)>| -> i64 {
            let Some((pn, next)) = primary else {
                return priority;
            };
            if !same_attribute(obs, attr, ni, pn) {
                if c.score == INFINITY && dependent_role == Some(Role::Promoted) {
                    return -INFINITY;
                }
                return priority;
            }
            if primary_role.is_some() && primary_role != next {
                return priority;
            }
            let score = if dependent_role == Some(Role::Unpromoted) {
                -c.score
            } else {
                c.score
            };
            add_score(score, priority)
        };
        let Some(primary) = unit_of(obs, &c.with_rsc) else {
            continue;
        };
        match primary {
            super::Unit::Group(pg) if obs.groups[pg].clone.is_some() => {
                let pspec = obs.groups[pg].clone.as_ref().expect("a clone");
                let instances = &obs.groups[pg].members;
                if !instances.iter().all(|&m| ctx.done[m]) {
                    continue;
                }
                let placed = |m: usize| {
                    (!obs.resources[m].blocked)
                        .then_some(ctx.desired.assigned[m])
                        .flatten()
                };
                if pspec.promotable.is_some()
                    && primary_role.is_some()
                    && dependent_role == Some(Role::Promoted)
                {
                    let found = instances.iter().any(|&m| {
                        placed(m) == Some(ni) && ctx.desired.next_roles[m] == primary_role
                    });
                    if found {
                        priority = add_score(priority, c.score);
                    } else if c.score >= INFINITY {
                        priority = -INFINITY;
                    }
                    continue;
                }
                if !matches!(dependent_role, Some(Role::Promoted | Role::Unpromoted)) {
                    continue;
                }
                let next = |m: usize| ctx.desired.next_roles[m].or(Some(Role::Started));
                if spec.interleave && spec.node_max == pspec.node_max {
                    if let Some(&m) = instances.iter().find(|&&m| placed(m) == Some(ni)) {
                        priority = apply(priority, Some((ni, next(m))));
                    }
                } else if c.score < INFINITY {
                    for &m in instances {
                        if let Some(pn) = ctx.desired.assigned[m] {
                            priority = apply(priority, Some((pn, next(m))));
                        }
                    }
                }
            }
            _ => {
                if !matches!(dependent_role, Some(Role::Promoted | Role::Unpromoted)) {
                    continue;
                }
                let key = match primary {
                    super::Unit::Group(pg) => {
                        let members = &obs.groups[pg].members;
                        let m = if c.score >= INFINITY {
                            members.last()
                        } else {
                            members.first()
                        };
                        match m {
                            Some(&m) => m,
                            None => continue,
                        }
                    }
                    super::Unit::Primitive(p) => p,
                };
                if !ctx.done[key] {
                    continue;
                }
                let pn = ctx.desired.assigned[key];
                priority = apply(priority, pn.map(|n| (n, Some(Role::Started))));
            }
        }
    }
    priority
}
