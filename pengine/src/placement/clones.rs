//! Placement of an anonymous clone's instances as Pacemaker 2.1.5 distributes them: each
//! instance scored as a primitive (the clone's locations and its own, stickiness, failures, the
//! clone's colocations), instances ordered (active on an allowed node first, then by instance
//! number), those running kept on their node while it holds fewer than clone-max/nodes, then
//! the rest placed one by one, a node taking at most `clone-node-max` instances and the clone
//! at most `clone-max`. An instance of a clone of a group is placed as one: its scores are its
//! members' summed (the group's colocation of each member with the one before it), all its
//! members go to its node, up to the first member that cannot run there.

use std::collections::BTreeMap;

use super::members::record_changes;
use super::{
    Ctx, ScoreNote, Step, StepOp, Trace, node_available, record, same_attribute, score_text,
    target_stopped, unit_of,
};
use crate::cib::INFINITY;
use crate::cib::add_score;

/// The nodes where the primary of a colocation is placed (every instance's, for a clone).
pub(super) fn placed_nodes(ctx: &Ctx, u: super::Unit) -> Vec<usize> {
    let obs = ctx.obs;
    match u {
        super::Unit::Group(gi) if obs.groups[gi].clone.is_some() => obs.groups[gi]
            .members
            .iter()
            .filter_map(|&m| ctx.desired.assigned.get(m).copied().flatten())
            .collect(),
        _ => {
            let key = super::unit_key(obs, u);
            ctx.desired
                .assigned
                .get(key)
                .copied()
                .flatten()
                .into_iter()
                .collect()
        }
    }
}

/// The best node for an instance, as `assign_best_node` ranks them: score, then (unless
/// placement-strategy=minimal) free capacity for `balanced`, fewest resources placed and its
/// current node, then name in byte order; only available nodes with a non-negative score. Of
/// the nodes sharing a positive best score its current node wins, unless the clone is globally
/// unique (Pacemaker lets unique instances rebalance).
fn best_node(
    ctx: &Ctx,
    scores: &BTreeMap<usize, i64>,
    running: Option<usize>,
    unique: bool,
) -> Option<usize> {
    let obs = ctx.obs;
    let strategy = obs.placement_strategy.as_str();
    let mut candidates: Vec<(usize, i64)> = scores
        .iter()
        .filter(|&(&ni, &s)| s >= 0 && node_available(obs, ni))
        .map(|(&ni, &s)| (ni, s))
        .collect();
    candidates.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| match strategy {
                "balanced" => super::capacity_cmp(ctx, a.0, b.0),
                _ => std::cmp::Ordering::Equal,
            })
            .then_with(|| match strategy {
                "minimal" => std::cmp::Ordering::Equal,
                _ => ctx.num_resources[a.0]
                    .cmp(&ctx.num_resources[b.0])
                    .then_with(|| (Some(b.0) == running).cmp(&(Some(a.0) == running))),
            })
            .then_with(|| obs.nodes[a.0].uname.cmp(&obs.nodes[b.0].uname))
    });
    let &(first, best) = candidates.first()?;
    match running {
        Some(cur)
            if !unique && best > 0 && candidates.iter().any(|&(ni, s)| ni == cur && s == best) =>
        {
            Some(cur)
        }
        _ => Some(first),
    }
}

/// Clone `gi`'s own scores before its instances are placed: its locations, and -INFINITY
/// where an instance of an anonymous clone reached its migration-threshold (Pacemaker bans
/// the whole clone there, `pcmk__threshold_reached`, before resources are sorted and placed:
/// what is colocated with the clone sees the ban too; bug-lf-2619), or everywhere once an
/// instance failed with on-fail=stop (`stop_failed`).
pub(super) fn own_scores(ctx: &Ctx, gi: usize) -> BTreeMap<usize, i64> {
    let obs = ctx.obs;
    let mut scores = inherited_scores(ctx, gi);
    if stop_failed(obs, gi) {
        for ni in
            (0..obs.nodes.len()).filter(|&ni| !crate::observed::is_orphan_node(&obs.nodes[ni]))
        {
            scores.insert(ni, -INFINITY);
        }
    }
    scores
}

/// Whether an instance of anonymous clone `gi` failed with a role after failure of Stopped
/// (on-fail=stop): Pacemaker 2.1.5 `unpack_rsc_op_failure` then resets the allowed nodes of
/// the instance's top parent, when that is an anonymous clone (not a bundle), to every node at
/// -INFINITY. Only the clone's own table: its instances (an instance group's row) keep theirs.
fn stop_failed(obs: &crate::observed::Observed, gi: usize) -> bool {
    obs.groups[gi].clone.as_ref().is_some_and(|c| !c.unique)
        && crate::bundles::bundle_of_child(obs, gi).is_none()
        && crate::clone_groups::instances(obs, gi)
            .iter()
            .flatten()
            .any(|&m| obs.resources[m].failed_to_stopped)
}

/// Clone `gi`'s scores its instances start from: its locations and the migration-threshold
/// bans of `own_scores` (`resource_location` on the clone reaches its children too).
fn inherited_scores(ctx: &Ctx, gi: usize) -> BTreeMap<usize, i64> {
    let obs = ctx.obs;
    let mut scores = super::members::location_scores(ctx, gi);
    if obs.groups[gi].clone.as_ref().is_some_and(|c| !c.unique) {
        for &m in &obs.groups[gi].members {
            for (ni, _) in super::fail_limits(obs, m) {
                if let Some(v) = scores.get_mut(&ni) {
                    *v = -INFINITY;
                }
            }
        }
    }
    scores
}

/// Places every instance of clone group `gi` (its primaries were placed by `assign_unit`).
pub(super) fn assign_clone(ctx: &mut Ctx, gi: usize) {
    let obs = ctx.obs;
    let Some(spec) = obs.groups[gi].clone.clone() else {
        return;
    };
    if let Some(bi) = crate::bundles::bundle_of_child(obs, gi) {
        assign_bundle_child(ctx, gi, bi);
        if let Some(p) = spec.promotable.as_ref() {
            super::promotable::set_roles(ctx, gi, p, &[]);
        }
        if let Some(t) = ctx.explain.filter(|t| obs.groups[gi].members.contains(t)) {
            let mut clone_steps = Some(Vec::new());
            let bundle = &obs.bundles[bi].id;
            record_changes(
                &mut clone_steps,
                &BTreeMap::new(),
                &ctx.desired.group_scores[gi],
                &|| {
                    format!(
                        "bundle {bundle}: its inner clone may run on the bundle's guest nodes only"
                    )
                },
            );
            let mut steps = Some(Vec::new());
            let n = obs.groups[gi]
                .members
                .iter()
                .position(|&m| m == t)
                .unwrap_or(0);
            record_changes(
                &mut steps,
                &BTreeMap::new(),
                &ctx.desired.scores[t],
                &|| format!("bundle {bundle}: instance {n} runs on replica {n}'s guest node only"),
            );
            let notes = role_notes(ctx, t);
            ctx.trace = Some(instance_trace(
                ctx,
                gi,
                t,
                steps.unwrap_or_default(),
                clone_steps,
                notes,
            ));
        }
        return;
    }
    // Each instance's resources; `members[k]` the one that speaks for instance `k` (its first).
    let units = crate::clone_groups::instances(obs, gi);
    let members: Vec<usize> = units.iter().map(|u| u[0]).collect();
    let clone_id = obs.groups[gi].id.clone();
    let mut clone_scores = own_scores(ctx, gi);
    let location_scores = inherited_scores(ctx, gi);
    // Explaining one of its instances (or a member of one): the instance, the resource, and
    // the clone's own score changes; `traced_first` when the resource speaks for its instance
    // (its changes are recorded in `ctx.instance_recording` as the instance is placed).
    let traced = ctx
        .explain
        .and_then(|t| units.iter().position(|u| u.contains(&t)).map(|k| (k, t)));
    let traced_first = traced.filter(|&(k, t)| units[k][0] == t).map(|(k, _)| k);
    let mut clone_steps: Option<Vec<Step>> = traced.map(|_| Vec::new());
    if clone_steps.is_some() {
        record_own_scores(ctx, gi, &clone_scores, &mut clone_steps);
    }
    // A bundle's own scores are never more than that (and exclusive discovery's bans:
    // `apply_exclusive_discovery`); only what it shows, its containers carry the rest.
    if let Some(b) = obs.bundles.iter().find(|b| b.containers == gi) {
        let mut own = location_scores.clone();
        let first = b.replicas.first().map(|r| r.container);
        if let Some((true, modes)) = first.and_then(|c| ctx.discoveries.get(c)) {
            for (ni, v) in own.iter_mut() {
                if modes.get(ni) != Some(&super::DiscoverMode::Exclusive) {
                    *v = -INFINITY;
                }
            }
        }
        ctx.desired.bundle_own_scores.insert(gi, own);
    }
    super::members::add_clone_dependents(ctx, gi, &mut clone_scores);
    record_changes(&mut clone_steps, &location_scores, &clone_scores, &|| {
        format!(
            "what is colocated with {clone_id}, scaled by the colocation's score (never below 0)"
        )
    });
    ctx.desired.group_scores[gi] = clone_scores.clone();
    // (a bundle never has a guest node among its allowed nodes: they are made while bundles
    // are unpacked, not to be probed)
    let bundle = obs.bundles.iter().any(|b| b.containers == gi);
    let guests = crate::bundles::guest_nodes(obs);
    let available: Vec<usize> = clone_scores
        .keys()
        .copied()
        .filter(|&ni| node_available(obs, ni) && !(bundle && guests.contains(&ni)))
        .collect();
    let all_coloc = spec.max < available.len();
    let loop_max = (spec.max / available.len().max(1)).max(1);
    // The clone's colocations with resources already placed, as its instances take them: all
    // of them when not every node gets an instance, else only mandatory and negative ones.
    let cib = ctx.cib;
    // With `interleave`, a colocation with another clone placing as many instances per node
    // pairs each instance with one of the other clone's (`interleaved`, applied as each
    // instance is placed), instead of the other clone's nodes as a whole.
    // A clone or bundle colocated with a bundle always pairs each instance with one of the
    // bundle's containers (`pcmk__bundle_apply_coloc_score` through `compatible_replica`).
    let interleaved_with = |with: &str| -> Option<usize> {
        let super::Unit::Group(w) = unit_of(obs, with)? else {
            return None;
        };
        let other = obs.groups[w].clone.as_ref()?;
        if w == gi || obs.groups[w].id != with {
            return None;
        }
        if obs.bundles.iter().any(|b| b.containers == w) {
            return Some(w);
        }
        (spec.interleave && other.node_max == spec.node_max).then_some(w)
    };
    let interleaved: Vec<(usize, usize)> = cib
        .colocations
        .iter()
        .enumerate()
        .filter(|(_, c)| c.rsc == clone_id)
        .filter(|(_, c)| all_coloc || c.score < 0 || c.score >= INFINITY)
        .filter(|(_, c)| c.rsc_role.is_none() && c.with_rsc_role.is_none())
        .filter_map(|(i, c)| {
            let w = interleaved_with(&c.with_rsc)?;
            ctx.done[obs.groups[w].members[0]].then_some((i, w))
        })
        .collect();
    let colocations: Vec<(usize, Vec<usize>)> = cib
        .colocations
        .iter()
        .enumerate()
        .filter(|(_, c)| c.rsc == clone_id)
        .filter(|(i, _)| !interleaved.iter().any(|(ci, _)| ci == i))
        .filter(|(_, c)| all_coloc || c.score < 0 || c.score >= INFINITY)
        // A positive colocation of one role counts when roles are chosen (`promotable.rs`).
        .filter(|(_, c)| {
            c.score < 0
                || super::promotable::role_filter(c.rsc_role.as_deref()).is_none()
                || super::promotable::primary_role_filter(ctx, c).is_some()
        })
        .filter_map(|(i, c)| {
            let w = unit_of(obs, &c.with_rsc).filter(|w| *w != super::Unit::Group(gi))?;
            let key = super::unit_key(obs, w);
            (key != usize::MAX && ctx.done[key]).then(|| (i, placed_nodes(ctx, w)))
        })
        .collect();
    let mut scores: Vec<BTreeMap<usize, i64>> = Vec::with_capacity(members.len());
    // Per instance: its scores before a colocation with a promotable clone's role that is
    // rolled back when, once the clone's limits apply, it leaves no node (the last one
    // applied; None when another colocation came after it).
    let mut revert_to: Vec<Option<BTreeMap<usize, i64>>> = Vec::with_capacity(members.len());
    let outer_recording = ctx.recording.take();
    let mut base: Vec<BTreeMap<usize, i64>> = Vec::with_capacity(members.len());
    for (k, &ri) in members.iter().enumerate() {
        ctx.recording = (traced_first == Some(k)).then(Vec::new);
        base.push(super::base_scores(ctx, ri));
        if let Some(steps) = ctx.recording.take() {
            ctx.instance_recording = Some(steps);
        }
    }
    let mut priorities = vec![0i64; members.len()];
    let mut promotion_added = vec![BTreeMap::new(); members.len()];
    if spec.promotable.is_some() {
        let before = traced_first.and_then(|k| base.get(k).cloned());
        (priorities, promotion_added) = super::promotable::add_promotion_scores(ctx, gi, &mut base);
        priorities.resize(members.len(), 0);
        promotion_added.resize(members.len(), BTreeMap::new());
        if let (Some(before), Some(after)) = (before, traced_first.and_then(|k| base.get(k))) {
            record_changes(&mut ctx.instance_recording, &before, after, &|| {
                "its promotion score here (a promotable clone's instances take it while placed)"
                    .into()
            });
        }
    }
    for (k, (unit, s)) in units.iter().zip(base).enumerate() {
        let ri = unit[0];
        let mut s = s;
        let tracing = traced_first == Some(k);
        // What `pcmk__clone_allocate` shows for the instance: before the clone's colocations.
        ctx.desired.member_scores[ri] = s.clone();
        // (a colocated group's locations count in full for its first member only: the later
        // ones are merely allowed where they apply, as `pcmk__group_apply_location` does)
        let collocated = obs.resources[ri]
            .group
            .is_none_or(|g| obs.groups[g].collocated());
        // Each member's scores are merged into the one before it as Pacemaker merges a
        // colocated dependent's, rolled back (with the members after it) when they would leave
        // no available node.
        let mut merging = true;
        for &m in &unit[1..] {
            ctx.recording = (traced.map(|t| t.1) == Some(m)).then(Vec::new);
            let ms = super::base_scores_as(ctx, m, !collocated);
            if let Some(steps) = ctx.recording.take() {
                ctx.instance_recording = Some(steps);
            }
            ctx.desired.member_scores[m] = ms.clone();
            if !merging {
                continue;
            }
            let mut work = s.clone();
            for (ni, v) in work.iter_mut() {
                *v = add_score(*v, ms.get(ni).copied().unwrap_or(-INFINITY));
            }
            if work
                .iter()
                .any(|(&ni, &v)| v >= 0 && node_available(obs, ni))
            {
                if tracing {
                    record_changes(&mut ctx.instance_recording, &s, &work, &|| {
                        format!(
                            "{}'s scores (an instance group sums its members')",
                            obs.resources[m].id
                        )
                    });
                }
                s = work;
            } else {
                merging = false;
            }
        }
        ctx.recording = None;
        let mut revert: Option<BTreeMap<usize, i64>> = None;
        for (ci, placed) in &colocations {
            let c = &cib.colocations[*ci];
            let before = tracing.then(|| s.clone());
            let why = || -> String {
                let on: Vec<&str> = placed
                    .iter()
                    .map(|&p| obs.nodes[p].uname.as_str())
                    .collect();
                format!(
                    "colocation {} with {} ({}, placed on: {})",
                    c.id,
                    c.with_rsc,
                    score_text(c.score),
                    if on.is_empty() {
                        "nothing".to_string()
                    } else {
                        on.join(", ")
                    }
                )
            };
            revert = None;
            // With one role of a promotable clone: the instances taking that role.
            if let Some((pg, role)) = super::promotable::primary_role_filter(ctx, c) {
                let dependent_role = super::promotable::role_filter(c.rsc_role.as_deref());
                let rc = super::promotable::RoleColoc {
                    score: c.score,
                    attr: c.node_attribute.as_deref(),
                    dependent_role,
                };
                let mut work = s.clone();
                super::promotable::dependent_with_promotable(ctx, pg, role, rc, &mut work);
                let revertible = dependent_role == Some(super::super::observed::Role::Promoted)
                    || (c.score < 0 && c.score > -INFINITY);
                let usable = work
                    .iter()
                    .any(|(&ni, &v)| v >= 0 && node_available(obs, ni));
                if !revertible || usable {
                    if revertible {
                        revert = Some(s.clone());
                    }
                    s = work;
                }
                if let Some(before) = &before {
                    record_changes(&mut ctx.instance_recording, before, &s, &|| {
                        format!(
                            "colocation {} with the {:?} role of {} ({})",
                            c.id,
                            role,
                            c.with_rsc,
                            score_text(c.score)
                        )
                    });
                }
                ctx.desired.trace[ri].push(ScoreNote {
                    node: usize::MAX,
                    delta: c.score,
                    why: format!("colocation {}", c.id),
                });
                continue;
            }
            let attr = c.node_attribute.as_deref();
            let alike = |ni: usize| placed.iter().any(|&p| same_attribute(obs, attr, ni, p));
            for ni in 0..obs.nodes.len() {
                let banned = if c.score >= INFINITY {
                    !alike(ni)
                } else {
                    c.score <= -INFINITY && alike(ni)
                };
                if banned {
                    s.insert(ni, -INFINITY);
                } else if c.score.abs() < INFINITY && alike(ni) {
                    if let Some(cur) = s.get(&ni).copied() {
                        s.insert(ni, add_score(cur, c.score));
                    }
                }
            }
            if let Some(before) = &before {
                record_changes(&mut ctx.instance_recording, before, &s, &why);
            }
            ctx.desired.trace[ri].push(ScoreNote {
                node: placed.first().copied().unwrap_or(usize::MAX),
                delta: c.score,
                why: format!("colocation {}", c.id),
            });
        }
        scores.push(s);
        revert_to.push(revert);
    }
    // Instance order (`pcmk__cmp_instance`): the less multiply active of two active ones; not
    // active on a node its own scores (before colocations) forbid; the higher priority; active; its node available;
    // the clone allowed there; not failed; the higher score there once the clone's
    // colocations are added; the lower instance number. An instance of a clone of a group is
    // where any of its members is, failed when one is, and judged by its summed scores.
    let group_instances = !spec.instances.is_empty();
    let current = |k: usize| {
        units[k]
            .iter()
            .find_map(|&m| obs.resources[m].running_on.first().copied())
    };
    let failed = |k: usize| units[k].iter().any(|&m| obs.resources[m].failed);
    let running_count = |k: usize| {
        let mut nodes: Vec<usize> = units[k]
            .iter()
            .flat_map(|&m| obs.resources[m].running_on.iter().copied())
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        nodes.len()
    };
    let allowed_here = |k: usize| {
        current(k).filter(|ni| {
            let own = if group_instances {
                &scores[k]
            } else {
                &ctx.desired.member_scores[members[k]]
            };
            own.get(ni).is_some_and(|&v| v >= 0)
        })
    };
    let here: Vec<Option<usize>> = (0..members.len()).map(allowed_here).collect();
    ctx.recording = outer_recording;
    let mut colocated: Vec<i64> = vec![0; members.len()];
    for k in 0..members.len() {
        if let Some(ni) = here[k] {
            colocated[k] = super::members::colocated_score(ctx, gi, members[k], ni);
        }
    }
    let mut order: Vec<usize> = (0..members.len()).collect();
    order.sort_by(|&a, &b| {
        let (na, nb) = (running_count(a), running_count(b));
        if na > 0 && nb > 0 && na != nb {
            return na.cmp(&nb);
        }
        let disallowed = |k: usize| current(k).is_some() && here[k].is_none();
        let by_allowed = disallowed(a).cmp(&disallowed(b)).then_with(|| {
            let p = |k: usize| priorities.get(k).copied().unwrap_or(0);
            p(b).cmp(&p(a))
        });
        if by_allowed.is_ne() {
            return by_allowed;
        }
        // The higher priority (a promotable instance's: its best promotion score) first.
        let by_priority = priorities[b].cmp(&priorities[a]);
        if by_priority.is_ne() {
            return by_priority;
        }
        let (Some(x), Some(y)) = (here[a], here[b]) else {
            return here[b].is_some().cmp(&here[a].is_some()).then(a.cmp(&b));
        };
        node_available(obs, y)
            .cmp(&node_available(obs, x))
            .then_with(|| {
                clone_scores
                    .contains_key(&y)
                    .cmp(&clone_scores.contains_key(&x))
            })
            .then_with(|| failed(a).cmp(&failed(b)))
            .then_with(|| colocated[b].cmp(&colocated[a]))
            .then(a.cmp(&b))
    });
    let mut count: BTreeMap<usize, usize> = BTreeMap::new();
    let mut assigned: Vec<Option<usize>> = vec![None; members.len()];
    let mut decided = vec![false; members.len()];
    let mut allocated = 0usize;
    let mut appended = vec![0usize; members.len()];
    // The limits put on each instance's nodes (node, score): for a clone of a group, its
    // members' scores take them too.
    let mut bans: Vec<Vec<(usize, i64)>> = vec![Vec::new(); members.len()];
    // The resources of this clone placed so far (for the utilization a chain still needs).
    let mut placed_now: Vec<bool> = vec![false; obs.resources.len()];
    // One instance's assignment (with `prefer`, only to that node, else it stays undecided).
    let mut allocate = |ctx: &mut Ctx,
                        k: usize,
                        prefer: Option<usize>,
                        scores: &mut Vec<BTreeMap<usize, i64>>,
                        count: &mut BTreeMap<usize, usize>,
                        appended: &mut Vec<usize>,
                        bans: &mut Vec<Vec<(usize, i64)>>,
                        placed_now: &mut Vec<bool>|
     -> Option<usize> {
        let ri = members[k];
        let r = &obs.resources[ri];
        let unit = &units[k];
        let tracing = traced_first == Some(k);
        // Each attempt passes the clone's colocations on to the instance once more (a failed
        // pre-assignment leaves them passed twice, as in Pacemaker).
        appended[k] += 1;
        // (the instance's own scores, before the clone's colocations: see the first pass)
        if let Some(p) = prefer {
            let own = if group_instances {
                &scores[k]
            } else {
                &ctx.desired.member_scores[unit[0]]
            };
            if own.get(&p).is_none_or(|&v| v < 0) {
                return None;
            }
        }
        let nodes: Vec<usize> = scores[k].keys().copied().collect();
        for ni in nodes {
            let parent = clone_scores.get(&ni).copied();
            let full = count.get(&ni).copied().unwrap_or(0) >= spec.node_max;
            let ban = match parent {
                _ if !node_available(obs, ni) || r.orphan => Some(-INFINITY),
                None => Some(-INFINITY),
                // (a negative score of the clone's there bans the instance outright: Pacemaker
                // 2.1.5 `can_run_instance` adds it, then -INFINITY; a bundle's containers too)
                Some(w) if w < 0 => Some(-INFINITY),
                Some(_) if full => Some(-INFINITY),
                Some(_) => None,
            };
            if let Some(b) = ban {
                bans[k].push((ni, b));
                let cur = scores[k].get(&ni).copied().unwrap_or(0);
                let limited = if b <= -INFINITY {
                    -INFINITY
                } else {
                    cur.min(b)
                };
                scores[k].insert(ni, limited);
                if tracing && limited != cur {
                    record(
                        &mut ctx.instance_recording,
                        ni,
                        StepOp::Set(limited),
                        || match parent {
                            _ if !node_available(obs, ni) => {
                                "the clone's limits: the node cannot run resources".into()
                            }
                            _ if r.orphan => "the clone's limits: an orphaned instance".into(),
                            None => format!("the clone's limits: {clone_id} has no score here"),
                            Some(w) if w < 0 => format!(
                                "the clone's limits: {clone_id}'s own score here is {}",
                                score_text(w)
                            ),
                            Some(_) => format!(
                                "the clone's limits: clone-node-max={} instances placed here already",
                                spec.node_max
                            ),
                        },
                    );
                }
            }
        }
        // A Promoted-role (or finite negative) colocation with a promotable clone's role that
        // now leaves no node is rolled back (`apply_this_with`).
        if let Some(mut before) = revert_to[k].take() {
            let usable = |m: &BTreeMap<usize, i64>| {
                m.iter().any(|(&ni, &v)| v >= 0 && node_available(obs, ni))
            };
            if !usable(&scores[k]) {
                for &(ni, b) in &bans[k] {
                    let cur = before.get(&ni).copied().unwrap_or(0);
                    before.insert(
                        ni,
                        if b <= -INFINITY {
                            -INFINITY
                        } else {
                            cur.min(b)
                        },
                    );
                }
                if usable(&before) {
                    if tracing {
                        record_changes(&mut ctx.instance_recording, &scores[k], &before, &|| {
                            "its colocation with a promotable clone's role is rolled back: it left no node".into()
                        });
                    }
                    scores[k] = before;
                }
            }
        }
        let backup = scores[k].clone();
        // Each interleaved colocation with the instance of the other clone placed on the
        // instance's best node that has one (Pacemaker's `find_compatible_child`).
        for &(ci, w) in &interleaved {
            let c = &cib.colocations[ci];
            // (nodes sorted as `pcmk__sort_nodes` with no current node: an unavailable node
            // counts -INFINITY, then score, free capacity for `balanced`, fewest resources
            // placed unless `minimal`, then name: order-clone)
            let strategy = obs.placement_strategy.as_str();
            let mut nodes: Vec<(usize, i64)> = scores[k]
                .iter()
                .map(|(&n, &v)| (n, if node_available(obs, n) { v } else { -INFINITY }))
                .collect();
            nodes.sort_by(|a, b| {
                b.1.cmp(&a.1)
                    .then_with(|| match strategy {
                        "balanced" => super::capacity_cmp(ctx, a.0, b.0),
                        _ => std::cmp::Ordering::Equal,
                    })
                    .then_with(|| match strategy {
                        "minimal" => std::cmp::Ordering::Equal,
                        _ => ctx.num_resources[a.0].cmp(&ctx.num_resources[b.0]),
                    })
                    .then_with(|| obs.nodes[a.0].uname.cmp(&obs.nodes[b.0].uname))
            });
            let others = crate::clone_groups::instances(obs, w);
            let placed: Vec<Option<usize>> = others
                .iter()
                .map(|u| ctx.desired.assigned.get(u[0]).copied().flatten())
                .collect();
            let pair = nodes
                .iter()
                .map(|n| n.0)
                .find(|n| placed.contains(&Some(*n)));
            let before = tracing.then(|| scores[k].clone());
            // The paired instance of a clone of groups counts as its last member for a
            // mandatory colocation, as its first for an optional one (`colocate_with_group`);
            // a member not placed takes the score off every node (none for a negative one).
            let with_node = pair.map(|p| {
                let u = &others[placed.iter().position(|&n| n == Some(p)).unwrap_or(0)];
                let m = if c.score >= INFINITY {
                    u[u.len() - 1]
                } else {
                    u[0]
                };
                ctx.desired.assigned.get(m).copied().flatten()
            });
            for (&ni, v) in scores[k].iter_mut() {
                match with_node {
                    Some(None) if c.score >= 0 => *v = add_score(*v, -c.score),
                    Some(None) => {}
                    Some(Some(n)) if n == ni => {
                        if c.score.abs() < INFINITY {
                            *v = add_score(*v, c.score);
                        } else if c.score <= -INFINITY {
                            *v = -INFINITY;
                        }
                    }
                    _ if c.score >= INFINITY => *v = -INFINITY,
                    _ => {}
                }
            }
            // A primitive instance that cannot be paired with a mandatory colocation's clone
            // or bundle is assigned nowhere and so stopped: `pcmk__primitive_assign` then bans
            // it from every node of the cluster, adding those it had no score for.
            if pair.is_none() && c.score >= INFINITY && !group_instances {
                for ni in 0..obs.nodes.len() {
                    scores[k].insert(ni, -INFINITY);
                }
                ctx.desired.unpaired.insert(ri);
            }
            if let Some(before) = before {
                record_changes(&mut ctx.instance_recording, &before, &scores[k], &|| {
                    let paired = match pair {
                        Some(p) => {
                            format!("the instance of {} on {}", c.with_rsc, obs.nodes[p].uname)
                        }
                        None => format!("no instance of {} placed", c.with_rsc),
                    };
                    format!(
                        "colocation {} ({}), interleaved: with {paired}",
                        c.id,
                        score_text(c.score)
                    )
                });
            }
            ctx.desired.trace[ri].push(ScoreNote {
                node: pair.unwrap_or(usize::MAX),
                delta: c.score,
                why: format!("colocation {} (interleaved)", c.id),
            });
        }
        // What is colocated with the clone, as the instance takes it while placed.
        let before = tracing.then(|| scores[k].clone());
        for _ in 0..appended[k] {
            super::members::add_parent_dependents(ctx, gi, all_coloc, &mut scores[k]);
        }
        if let Some(before) = before {
            record_changes(&mut ctx.instance_recording, &before, &scores[k], &|| {
                format!(
                    "what is colocated with {clone_id}, scaled ({}; passed on {} time(s))",
                    if all_coloc {
                        "all of it: not every node gets an instance"
                    } else {
                        "only negative colocations: every node gets an instance"
                    },
                    appended[k]
                )
            });
        }
        if crate::bundles::is_replica_container(obs, ri) {
            let before = tracing.then(|| scores[k].clone());
            super::members::add_instance_dependents(ctx, ri, &mut scores[k]);
            if let Some(before) = before {
                record_changes(&mut ctx.instance_recording, &before, &scores[k], &|| {
                    "what is colocated with the bundle, scaled, as its container takes it".into()
                });
            }
        }
        // (an unmanaged instance stays where it is, whatever its next role: Pacemaker sets
        // that to its current role)
        // (stop-all-resources leaves it unassigned without a ban: `pcmk__finalize_assignment`)
        if obs.stop_all && !super::stop_banned(obs, ri) && r.managed {
            return None;
        }
        if target_stopped(obs, ri) && r.managed {
            // (banned from every node once its colocations are applied; a group instance's
            // member is, the instance group itself keeps its scores)
            for (&ni, v) in scores[k].iter_mut() {
                if tracing && *v != -INFINITY {
                    record(
                        &mut ctx.instance_recording,
                        ni,
                        StepOp::Set(-INFINITY),
                        || "it is to be stopped (target-role)".into(),
                    );
                }
                *v = -INFINITY;
                if !group_instances {
                    bans[k].push((ni, -INFINITY));
                }
            }
            return None;
        }
        let running = unit
            .iter()
            .find_map(|&m| obs.resources[m].running_on.first().copied());
        // With a placement strategy, nodes without room for the instance and what a mandatory
        // colocation chain ties to it are banned once its scores are shown; when no node has
        // that room, those without room for the instance alone, the one with the most free
        // capacity preferred (`pcmk__ban_insufficient_capacity`).
        let mut limited = scores[k].clone();
        let mut most_capable: Option<usize> = None;
        if obs.placement_strategy != "default" && r.managed {
            let placing = super::utilization::Placing {
                first: ri,
                placed: &|m: usize| placed_now[m],
                all_coloc,
            };
            let need = super::utilization::instance_need(ctx, &placing);
            let usable: Vec<usize> = limited
                .keys()
                .copied()
                .filter(|&ni| node_available(obs, ni))
                .collect();
            let any_capable = usable.iter().any(|&ni| super::fits_need(ctx, &need, ni));
            for &ni in &usable {
                let fits = if any_capable {
                    super::fits_need(ctx, &need, ni)
                } else {
                    super::fits_need(ctx, &r.utilization, ni)
                };
                if !fits {
                    limited.insert(ni, -INFINITY);
                }
                if !any_capable
                    && most_capable
                        .is_none_or(|m| super::capacity_cmp(ctx, ni, m) == std::cmp::Ordering::Less)
                {
                    most_capable = Some(ni);
                }
            }
        }
        let chosen = if !r.managed {
            running.filter(|&ni| r.running_on.len() == 1 && scores[k].contains_key(&ni))
        } else {
            match prefer.or(most_capable) {
                Some(p) => {
                    let best = best_node(ctx, &limited, running, spec.unique);
                    let best_score = best.and_then(|b| limited.get(&b).copied());
                    let ps = limited.get(&p).copied().unwrap_or(-INFINITY);
                    let preferred =
                        (node_available(obs, p) && ps >= 0 && best_score.is_some_and(|b| ps >= b))
                            .then_some(p);
                    if prefer.is_some() {
                        preferred
                    } else {
                        preferred.or(best)
                    }
                }
                None => best_node(ctx, &limited, running, spec.unique),
            }
        };
        if prefer.is_some() && chosen.is_none() {
            // (Shown when Pacemaker's assignment chose another node; when it found none the
            // instance stays unassigned, shown once.)
            let elsewhere = best_node(ctx, &scores[k], running, spec.unique).is_some_and(|b| {
                node_available(obs, b) && scores[k].get(&b).is_some_and(|&v| v >= 0)
            });
            if !group_instances && r.managed && elsewhere {
                ctx.desired.abandoned_scores.push((ri, scores[k].clone()));
            }
            if tracing {
                record_changes(&mut ctx.instance_recording, &scores[k], &backup, &|| {
                    format!(
                        "kept on {} first, where it is active, it would go elsewhere: this attempt is undone",
                        prefer.map_or("its node", |p| obs.nodes[p].uname.as_str())
                    )
                });
            }
            scores[k] = backup;
        }
        if let Some(ni) = chosen {
            *count.entry(ni).or_insert(0) += 1;
            // (a member to be stopped is left unassigned, and so are the members after it,
            // colocated with it: they take no share of the node, `pcmk__group_assign`)
            let placed_members = unit
                .iter()
                .position(|&m| super::stop_banned(obs, m) && obs.resources[m].managed)
                .unwrap_or(unit.len());
            for &m in &unit[..placed_members] {
                placed_now[m] = true;
                ctx.num_resources[ni] += 1;
                for (name, v) in &obs.resources[m].utilization {
                    *ctx.util_used[ni].entry(name.clone()).or_insert(0) += *v;
                }
            }
        }
        chosen
    };
    for &k in &order {
        if allocated >= spec.max {
            break;
        }
        let Some(cur) = current(k) else { continue };
        // (Pacemaker's `allocate_instance` reads the instance's own scores, before the clone's
        // colocations its assignment adds: an instance they then send elsewhere is assigned,
        // shown, and assigned again later)
        let own = if group_instances {
            &scores[k]
        } else {
            &ctx.desired.member_scores[units[k][0]]
        };
        if failed(k) || !node_available(obs, cur) || own.get(&cur).is_none_or(|&v| v < 0) {
            continue;
        }
        if count.get(&cur).copied().unwrap_or(0) >= loop_max {
            continue;
        }
        if let Some(ni) = allocate(
            ctx,
            k,
            Some(cur),
            &mut scores,
            &mut count,
            &mut appended,
            &mut bans,
            &mut placed_now,
        ) {
            assigned[k] = Some(ni);
            decided[k] = true;
            allocated += 1;
        }
    }
    for &k in &order {
        if decided[k] {
            continue;
        }
        decided[k] = true;
        if allocated >= spec.max {
            for (&ni, v) in scores[k].iter_mut() {
                if traced_first == Some(k) && *v != -INFINITY {
                    record(
                        &mut ctx.instance_recording,
                        ni,
                        StepOp::Set(-INFINITY),
                        || format!("clone-max={} instances are placed already", spec.max),
                    );
                }
                *v = -INFINITY;
                bans[k].push((ni, -INFINITY));
            }
            continue;
        }
        assigned[k] = allocate(
            ctx,
            k,
            None,
            &mut scores,
            &mut count,
            &mut appended,
            &mut bans,
            &mut placed_now,
        );
        if assigned[k].is_some() {
            allocated += 1;
        }
    }
    let instance_groups = spec.instances.clone();
    if !instance_groups.is_empty() {
        ctx.desired
            .clone_base_scores
            .insert(gi, location_scores.clone());
    }
    for (k, unit) in units.iter().enumerate() {
        let node = assigned[k];
        let instance_scores = std::mem::take(&mut scores[k]);
        let banned = |mut s: BTreeMap<usize, i64>| {
            for &(ni, b) in &bans[k] {
                if let Some(v) = s.get_mut(&ni) {
                    *v = if b <= -INFINITY {
                        -INFINITY
                    } else {
                        (*v).min(b)
                    };
                }
            }
            s
        };
        // (an instance group starts from the clone's locations, not what is colocated with
        // the clone)
        if let Some(&ig) = instance_groups.get(k) {
            // (plus its promotion scores)
            let mut own = location_scores.clone();
            for (ni, &v) in &promotion_added[k] {
                if let Some(w) = own.get_mut(ni) {
                    *w = add_score(*w, v);
                }
            }
            if !promotion_added[k].is_empty() {
                ctx.desired.clone_base_scores.insert(ig, own.clone());
            }
            ctx.desired.group_scores[ig] = banned(own);
        }
        // A group instance's members follow its first, up to one that cannot run there;
        // each later member may only go where the one before it went.
        let mut placed = node;
        for &ri in unit {
            if ri == unit[0] {
                ctx.desired.scores[ri] = instance_scores.clone();
                if !instance_groups.is_empty() {
                    let own = banned(ctx.desired.member_scores[ri].clone());
                    ctx.desired.instance_scores.insert(ri, own);
                }
            } else {
                let tracing = traced.is_some_and(|t| t.1 == ri);
                let own = banned(ctx.desired.member_scores[ri].clone());
                if tracing {
                    record_changes(
                        &mut ctx.instance_recording,
                        &ctx.desired.member_scores[ri],
                        &own,
                        &|| "the clone's limits for its instance".into(),
                    );
                }
                ctx.desired.instance_scores.insert(ri, own.clone());
                let mut fin = own;
                let before = tracing.then(|| fin.clone());
                for (&ni, v) in fin.iter_mut() {
                    if placed != Some(ni) {
                        *v = -INFINITY;
                    }
                }
                if let Some(ni) = placed {
                    if target_stopped(obs, ri) || fin.get(&ni).is_none_or(|&v| v < 0) {
                        placed = None;
                    }
                }
                // The members after it are colocated with it: Pacemaker adds their scores
                // there (each while the sum stays usable), before it bans a member to be
                // stopped from every node.
                if let (Some(ni), Some(j)) = (placed, unit.iter().position(|&m| m == ri)) {
                    let mut acc = fin.get(&ni).copied().unwrap_or(-INFINITY);
                    for &m in &unit[j + 1..] {
                        let theirs = ctx.desired.member_scores[m].get(&ni).copied();
                        let sum = add_score(acc, theirs.unwrap_or(-INFINITY));
                        if sum < 0 {
                            break;
                        }
                        acc = sum;
                    }
                    fin.insert(ni, acc);
                }
                // What is colocated with the clone, given to the instance group, is
                // colocated with its last member (`expand_group_colocations`), which adds
                // those dependents' scores while it is placed (clone-anon-failcount).
                if placed.is_some() && unit.last() == Some(&ri) {
                    for _ in 0..appended[k] {
                        super::members::add_parent_dependents(ctx, gi, all_coloc, &mut fin);
                    }
                }
                if super::stop_banned(obs, ri) && obs.resources[ri].managed {
                    for v in fin.values_mut() {
                        *v = -INFINITY;
                    }
                }
                if let Some(before) = before {
                    record_changes(&mut ctx.instance_recording, &before, &fin, &|| {
                        match placed {
                            Some(p) => format!(
                                "an instance group's member runs only where the one before it does ({}), taking the scores of the members after it (and, last, what is colocated with the clone)",
                                obs.nodes[p].uname
                            ),
                            None => "an instance group's member runs only where the one before it does: nowhere".into(),
                        }
                    });
                }
                ctx.desired.scores[ri] = fin;
            }
            ctx.desired.assigned[ri] = placed;
            ctx.done[ri] = true;
        }
    }
    if let Some(p) = spec.promotable.as_ref() {
        super::promotable::set_roles(ctx, gi, p, &order);
    }
    if let Some((k, t)) = traced {
        let steps = ctx.instance_recording.take().unwrap_or_default();
        let mut notes = vec![format!(
            "instances are placed in turn (active ones on their node first, then by priority and score): this one {} of {}",
            order.iter().position(|&o| o == k).map_or(0, |p| p + 1),
            order.len()
        )];
        notes.extend(role_notes(ctx, t));
        ctx.trace = Some(instance_trace(ctx, gi, t, steps, clone_steps, notes));
    }
}

/// Clone `gi`'s own scores (`own_scores`, `scores`) as steps: the symmetric default, its
/// locations, the bans of a migration-threshold an instance reached.
fn record_own_scores(
    ctx: &Ctx,
    gi: usize,
    scores: &BTreeMap<usize, i64>,
    steps: &mut Option<Vec<Step>>,
) {
    let obs = ctx.obs;
    let id = obs.groups[gi].id.as_str();
    let start: BTreeMap<usize, i64> = if obs.symmetric {
        (0..obs.nodes.len())
            .filter(|&ni| !crate::observed::is_orphan_node(&obs.nodes[ni]))
            .map(|ni| (ni, obs.nodes[ni].weight))
            .collect()
    } else {
        BTreeMap::new()
    };
    record_changes(steps, &BTreeMap::new(), &start, &|| {
        "symmetric-cluster: every node starts at its node score (0 unless configured)".into()
    });
    let locations = super::members::location_scores(ctx, gi);
    record_changes(steps, &start, &locations, &|| {
        let ids: Vec<&str> = ctx
            .cib
            .locations
            .iter()
            .filter(|l| l.rsc == id)
            .map(|l| l.id.as_str())
            .collect();
        format!("location constraints on {id}: {}", ids.join(", "))
    });
    record_changes(steps, &locations, scores, &|| {
        "an instance reached migration-threshold here: the whole clone is banned".into()
    });
}

/// The next role chosen for promotable instance `ri`, with its promotion scores.
fn role_notes(ctx: &Ctx, ri: usize) -> Vec<String> {
    let obs = ctx.obs;
    let Some(role) = ctx.desired.next_roles.get(ri).copied().flatten() else {
        return Vec::new();
    };
    let scores: Vec<String> = ctx
        .desired
        .promotion_scores
        .iter()
        .filter(|&&(m, _, _)| m == ri)
        .map(|&(_, node, score)| {
            format!(
                "{} on {}",
                score_text(score),
                node.map_or("none", |ni| obs.nodes[ni].uname.as_str())
            )
        })
        .collect();
    vec![format!(
        "role {role:?}: promotion score {} (instances with the highest are promoted, up to promoted-max)",
        if scores.is_empty() {
            "none".to_string()
        } else {
            scores.join(", ")
        }
    )]
}

/// The trace of clone `gi`'s instance (or instance member) `ri`, placed as its scores say:
/// each node filtered or ranked by its final score.
fn instance_trace(
    ctx: &Ctx,
    gi: usize,
    ri: usize,
    steps: Vec<Step>,
    clone_steps: Option<Vec<Step>>,
    notes: Vec<String>,
) -> Trace {
    let obs = ctx.obs;
    let scores = &ctx.desired.scores[ri];
    let filtered: Vec<(usize, Option<String>)> = (0..obs.nodes.len())
        .map(|ni| (ni, super::filter_reason(obs, scores, ni)))
        .collect();
    let mut ranking: Vec<usize> = filtered
        .iter()
        .filter(|(_, why)| why.is_none())
        .map(|&(ni, _)| ni)
        .collect();
    // (by score then name, the node chosen first: the clone's order of instances, its
    // pre-assignment to their nodes and `assign_best_node`'s tie-breaks chose it)
    let chosen = ctx.desired.assigned[ri];
    ranking.sort_by(|&a, &b| {
        (Some(b) == chosen)
            .cmp(&(Some(a) == chosen))
            .then_with(|| scores.get(&b).cmp(&scores.get(&a)))
            .then_with(|| obs.nodes[a].uname.cmp(&obs.nodes[b].uname))
    });
    Trace {
        rsc: ri,
        group: obs.resources[ri]
            .group
            .filter(|&g| crate::clone_groups::is_instance(obs, g)),
        steps,
        filtered,
        ranking,
        notes,
        assigned: ctx.desired.assigned[ri],
        clone: Some(gi),
        clone_steps: clone_steps.unwrap_or_default(),
    }
}

/// A bundle's inner clone (`pcmk__bundle_allocate`): instance N may only run on replica N's
/// guest node (INFINITY there, -INFINITY elsewhere), and is assigned there even when that node
/// cannot run resources (its connection stopping or not yet started: `pcmk__finalize_assignment`
/// lets the graph assume a guest node's connection will come up; the instance's start then
/// waits, unrunnable, for the connection's); the clone itself is allowed on the bundle's guest
/// nodes only.
fn assign_bundle_child(ctx: &mut Ctx, gi: usize, bi: usize) {
    let obs = ctx.obs;
    let members = obs.groups[gi].members.clone();
    let guest_nodes: Vec<Option<usize>> = (0..members.len())
        .map(|n| crate::bundles::replica_node(obs, bi, n))
        .collect();
    let mut clone_scores = BTreeMap::new();
    for ni in 0..obs.nodes.len() {
        let bundle_node = guest_nodes.contains(&Some(ni));
        clone_scores.insert(ni, if bundle_node { 0 } else { -INFINITY });
    }
    ctx.desired.group_scores[gi] = clone_scores;
    for (n, &ri) in members.iter().enumerate() {
        let own = guest_nodes.get(n).copied().flatten();
        let mut s = BTreeMap::new();
        if let Some(g) = own {
            s.insert(g, INFINITY);
        }
        ctx.desired.member_scores[ri] = s.clone();
        ctx.desired.scores[ri] = s;
        let r = &obs.resources[ri];
        let placed = own.filter(|&g| {
            if !r.managed {
                r.running_on.contains(&g)
            } else {
                !target_stopped(obs, ri) && !r.orphan
            }
        });
        if let Some(ni) = placed {
            ctx.num_resources[ni] += 1;
        }
        ctx.desired.assigned[ri] = placed;
        ctx.done[ri] = true;
    }
}
