//! Placing a colocated group member by member, as Pacemaker 2.1.5 does.
//!
//! Facts (Pacemaker 2.1.5, pcmk_sched_group.c, pcmk_sched_primitive.c, pcmk_sched_colocation.c):
//! - each member is placed as a primitive of its own, in member order; every member after the
//!   first is colocated (INFINITY) with the member before it, so a member that cannot run leaves
//!   the members after it nowhere to run;
//! - the group's location constraints count in full for the first member only; the later members
//!   only get the nodes allowed (score 0); stickiness and failures are each member's own;
//! - "group with X" colocations apply to the first member, "X with group" ones to the last
//!   member (a mandatory one placing X with the last member, an optional one with the first);
//! - a member first applies its "this with" colocations (an optional one rolled back when it
//!   would leave no node with a non-negative score), then adds the scores of what is colocated
//!   with it, scaled by score/INFINITY, recursively (`add_colocated`), each such merge rolled
//!   back when it would leave no usable node;
//! - the node is then the best-scored available one, its current node winning a tie of
//!   positive scores; a negative best score leaves the member stopped.

use std::collections::BTreeMap;

use super::{
    Ctx, ScoreNote, Step, StepOp, Trace, Unit, base_scores, base_scores_as, capacity_cmp,
    colocated_need, fits_need, no_fencing_device, node_available, record, same_attribute,
    score_text, target_stopped,
};
use crate::cib::INFINITY;
use crate::cib::add_score;
use crate::observed::is_orphan_node;

/// A resource a colocation names: a primitive (a group member included) or a whole group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Named {
    Primitive(usize),
    Group(usize),
}

/// One colocation as seen while placing members (configured, or a group's internal one).
#[derive(Debug, Clone)]
struct Coloc {
    id: String,
    dependent: Named,
    primary: Named,
    score: i64,
    attr: Option<String>,
    influence: bool,
    /// With a promotable clone's Promoted or Unpromoted role: the clone and the role.
    primary_role: Option<(usize, crate::observed::Role)>,
    /// The dependent's role named by the colocation (None: any).
    dependent_role: Option<crate::observed::Role>,
    /// With a bundle's Promoted role: the bundle (its primary nodes are those of the replicas
    /// whose inner instance is to be promoted).
    promoted_bundle: Option<usize>,
}

fn named(ctx: &Ctx, id: &str) -> Option<Named> {
    let obs = ctx.obs;
    obs.group_index(id)
        .map(Named::Group)
        .or_else(|| obs.rsc_index(id).map(Named::Primitive))
}

/// Pacemaker's resource variant order (primitive < group < clone, a promotable clone after
/// the others), then priority, for sorting lists.
fn rank<'a>(ctx: &Ctx<'a>, n: Named) -> (i64, u8, &'a str) {
    let obs = ctx.obs;
    let (meta, variant, id) = match n {
        Named::Primitive(ri) => (&obs.resources[ri].meta, 0, obs.resources[ri].id.as_str()),
        Named::Group(gi) => {
            let g = &obs.groups[gi];
            let variant = match &g.clone {
                None => 1,
                Some(spec) if spec.promotable.is_some() => 3,
                Some(_) => 2,
            };
            (&g.meta, variant, g.id.as_str())
        }
    };
    let priority = meta
        .get("priority")
        .and_then(|v| crate::cib::parse_score(v))
        .unwrap_or(0);
    (priority, variant, id)
}

/// Sorts colocations as Pacemaker keeps its lists: by the other side's priority (highest
/// first), groups before primitives, then the other side's id; stable otherwise.
fn sort_by_other(ctx: &Ctx, list: &mut [Coloc], other: impl Fn(&Coloc) -> Named) {
    list.sort_by(|a, b| {
        let (pa, va, ia) = rank(ctx, other(a));
        let (pb, vb, ib) = rank(ctx, other(b));
        pb.cmp(&pa).then(vb.cmp(&va)).then(ia.cmp(ib))
    });
}

fn configured(ctx: &Ctx, c: &crate::cib::Colocation) -> Option<Coloc> {
    if c.score == 0 {
        return None;
    }
    let dependent = named(ctx, &c.rsc)?;
    let primary = named(ctx, &c.with_rsc)?;
    let critical = |n: Named| {
        let meta = match n {
            Named::Primitive(ri) => &ctx.obs.resources[ri].meta,
            Named::Group(gi) => &ctx.obs.groups[gi].meta,
        };
        meta.get("critical").is_none_or(|v| crate::cib::is_true(v))
    };
    Some(Coloc {
        id: c.id.clone(),
        dependent,
        primary,
        score: c.score,
        attr: c.node_attribute.clone(),
        influence: c.influence.unwrap_or_else(|| critical(dependent)),
        primary_role: super::promotable::primary_role_filter(ctx, c),
        dependent_role: super::promotable::role_filter(c.rsc_role.as_deref()),
        promoted_bundle: ctx
            .obs
            .bundles
            .iter()
            .position(|b| b.id == c.with_rsc)
            .filter(|_| {
                super::promotable::role_filter(c.with_rsc_role.as_deref())
                    == Some(crate::observed::Role::Promoted)
            }),
    })
}

fn internal(ctx: &Ctx, dependent: usize, primary: usize) -> Coloc {
    let critical = ctx.obs.resources[dependent]
        .meta
        .get("critical")
        .is_none_or(|v| crate::cib::is_true(v));
    Coloc {
        id: "group:internal_colocation".into(),
        dependent: Named::Primitive(dependent),
        primary: Named::Primitive(primary),
        score: INFINITY,
        attr: None,
        influence: critical,
        primary_role: None,
        dependent_role: None,
        promoted_bundle: None,
    }
}

/// Whether group `gi` has started its placement (its colocations moved to its members).
fn expanded(ctx: &Ctx, gi: usize) -> bool {
    ctx.obs.groups[gi]
        .members
        .first()
        .is_some_and(|&m| ctx.in_progress[m] || ctx.done[m])
}

/// The colocations member `k` of group `gi` applies as the dependent ("this with").
fn this_with(ctx: &Ctx, gi: usize, k: usize) -> Vec<Coloc> {
    let obs = ctx.obs;
    let members = &obs.groups[gi].members;
    let ri = members[k];
    let own = Named::Primitive(ri);
    let group = Named::Group(gi);
    let earlier_unmanaged = members[..k].iter().any(|&m| !obs.resources[m].managed);
    let ids = [obs.resources[ri].id.as_str(), obs.groups[gi].id.as_str()];
    let mut list: Vec<Coloc> = super::positions_of(&ctx.colocations_by_rsc, &ids)
        .into_iter()
        .filter_map(|i| configured(ctx, &ctx.cib.colocations[i]))
        .filter(|c| c.primary != group && c.primary != own)
        .filter(|c| {
            c.dependent == own
                || (c.dependent == group && (k == 0 || (earlier_unmanaged && c.score >= INFINITY)))
        })
        .collect();
    if k > 0 && obs.groups[gi].collocated() {
        list.push(internal(ctx, ri, members[k - 1]));
    }
    sort_by_other(ctx, &mut list, |c| c.primary);
    list
}

/// The colocations naming `n` as the primary ("with this"): a group's are its last member's
/// once the group is being placed, and a member's include the next member's internal one.
fn with_this(ctx: &Ctx, n: Named) -> Vec<Coloc> {
    let obs = ctx.obs;
    // (a clone: what is colocated with the clone itself, as Pacemaker keeps it on the clone;
    // its instances take it only while placed)
    if let Named::Group(gi) = n {
        if obs.groups[gi].clone.is_some() {
            return clone_colocations(ctx, gi, false);
        }
    }
    let ri = match n {
        Named::Group(gi) => match obs.groups[gi].members.last() {
            Some(&last) => last,
            None => return Vec::new(),
        },
        Named::Primitive(ri) => ri,
    };
    let own = Named::Primitive(ri);
    let group = obs.resources[ri].group;
    let is_last = group.is_some_and(|g| obs.groups[g].members.last() == Some(&ri));
    let group_named = group.map(Named::Group);
    // (only colocations naming it or its group as the primary can qualify)
    let mut ids = vec![obs.resources[ri].id.as_str()];
    ids.extend(group.map(|g| obs.groups[g].id.as_str()));
    let mut list: Vec<Coloc> = super::positions_of(&ctx.colocations_by_with, &ids)
        .into_iter()
        .filter_map(|i| configured(ctx, &ctx.cib.colocations[i]))
        .filter(|c| c.dependent != own && Some(c.dependent) != group_named)
        .filter(|c| {
            c.primary == own
                || (is_last
                    && Some(c.primary) == group_named
                    && group.is_some_and(|g| expanded(ctx, g)))
        })
        .collect();
    if let Some(g) = group.filter(|&g| obs.groups[g].collocated()) {
        let members = &obs.groups[g].members;
        if let Some(k) = members.iter().position(|&m| m == ri) {
            if let Some(&next) = members.get(k + 1) {
                list.push(internal(ctx, next, ri));
            }
        }
    }
    sort_by_other(ctx, &mut list, |c| c.dependent);
    list
}

/// Whether the dependent of `c` may pull its primary: `influence`, or the primary is inactive;
/// never a bundle connection its container active on one node and not failed (moving a
/// container interrupts the service, moving a connection does not).
fn has_influence(ctx: &Ctx, c: &Coloc) -> bool {
    let obs = ctx.obs;
    if let (Named::Primitive(d), Named::Primitive(p)) = (c.dependent, c.primary) {
        let primary = &obs.resources[p];
        if crate::bundles::is_replica_connection(obs, d)
            && !primary.failed
            && primary.running_on.len() == 1
        {
            return false;
        }
    }
    let inactive = match c.primary {
        Named::Primitive(ri) => obs.resources[ri].running_on.is_empty(),
        Named::Group(gi) => obs.groups[gi]
            .members
            .iter()
            .all(|&m| obs.resources[m].running_on.is_empty()),
    };
    c.influence || inactive
}

/// A resource's node scores as Pacemaker holds them now: final once placed, else before
/// colocations.
fn current_scores(ctx: &mut Ctx, ri: usize) -> BTreeMap<usize, i64> {
    if ctx.done[ri] {
        return ctx.desired.scores[ri].clone();
    }
    if let Some(working) = &ctx.working[ri] {
        return working.clone();
    }
    let recording = ctx.recording.take();
    let kept = ctx.desired.trace[ri].len();
    let scores = match ctx.obs.resources[ri].group {
        Some(g) => {
            let first = ctx.obs.groups[g].members.first() == Some(&ri);
            base_scores_as(ctx, ri, first)
        }
        None => base_scores(ctx, ri),
    };
    ctx.desired.trace[ri].truncate(kept);
    ctx.recording = recording;
    scores
}

/// Whether some node in `scores` can run resources with a non-negative score.
fn any_usable(ctx: &Ctx, scores: &BTreeMap<usize, i64>) -> bool {
    scores
        .iter()
        .any(|(&ni, &v)| v >= 0 && node_available(ctx.obs, ni))
}

/// `factor` times `score`, rounded half away from zero in single precision as Pacemaker does,
/// never rounding a non-zero score to zero.
fn scaled(factor: f32, score: i64) -> i64 {
    let f = factor * score as f32;
    let mut w = if f < 0.0 { f - 0.5 } else { f + 0.5 } as i64;
    if w == 0 && score != 0 {
        w = if factor > 0.0 {
            1
        } else if factor < 0.0 {
            -1
        } else {
            0
        };
    }
    w
}

/// Marks a node a non-negative merge found unusable (Pacemaker's `INFINITY_HACK`): skipped by
/// later merges, and counted as 1 once the merge is done.
const UNUSABLE: i64 = -INFINITY * 100;

/// Adds to each node of `work` `factor` times the best score `theirs` has on an available node
/// sharing the node's `attr` value (a negative factor never turns a negative score positive).
/// `nonnegative`: a sum below zero is not taken (a positive node is marked `UNUSABLE`).
fn add_matching(
    ctx: &Ctx,
    work: &mut BTreeMap<usize, i64>,
    theirs: &BTreeMap<usize, i64>,
    attr: Option<&str>,
    factor: f32,
    nonnegative: bool,
) {
    let obs = ctx.obs;
    for (&ni, v) in work.iter_mut() {
        let mut best = -INFINITY;
        for (&m, &s) in theirs {
            if s > best && node_available(obs, m) && same_attribute(obs, attr, ni, m) {
                best = s;
            }
        }
        if (factor < 0.0 && best < 0) || *v == UNUSABLE {
            continue;
        }
        let sum = add_score(scaled(factor, best), *v);
        if nonnegative && sum < 0 && *v >= 0 {
            if *v > 0 {
                *v = UNUSABLE;
            }
            continue;
        }
        *v = sum;
    }
}

/// Adds the scores of `other` and, recursively, of what is colocated with it, scaled by
/// `factor`, to `nodes`; rolled back when that leaves no usable node. `merging` breaks loops.
fn add_colocated(
    ctx: &mut Ctx,
    other: Named,
    nodes: &mut BTreeMap<usize, i64>,
    attr: Option<&str>,
    factor: f32,
    merging: &mut Vec<Named>,
) {
    let flags = Merge {
        nonnegative: false,
        rollback: true,
    };
    add_colocated_as(ctx, other, nodes, attr, factor, merging, flags);
}

/// How `add_colocated_as` merges (Pacemaker's `pcmk__coloc_select_*` flags): `nonnegative`
/// takes no sum below zero, `rollback` drops the merge when it leaves no usable node (always
/// so for what is merged recursively).
#[derive(Debug, Clone, Copy)]
pub(super) struct Merge {
    pub nonnegative: bool,
    pub rollback: bool,
}

/// `add_colocated` with the merge flags.
fn add_colocated_as(
    ctx: &mut Ctx,
    other: Named,
    nodes: &mut BTreeMap<usize, i64>,
    attr: Option<&str>,
    factor: f32,
    merging: &mut Vec<Named>,
    flags: Merge,
) {
    if merging.contains(&other) {
        return;
    }
    merging.push(other);
    let mut work = nodes.clone();
    match other {
        // A clone counts with its own scores (its locations; once placed, what it merged),
        // not its instances' (Pacemaker merges a clone as a primitive).
        Named::Group(gi) if ctx.obs.groups[gi].clone.is_some() => {
            let done = ctx.obs.groups[gi].members.iter().all(|&m| ctx.done[m]);
            let theirs = if let Some(w) = ctx.role_weights[gi].clone().filter(|_| done) {
                w
            } else if done {
                ctx.desired.group_scores[gi].clone()
            } else {
                super::clones::own_scores(ctx, gi)
            };
            add_matching(ctx, &mut work, &theirs, attr, factor, flags.nonnegative);
        }
        Named::Group(gi) => {
            if let Some(&first) = ctx.obs.groups[gi].members.first() {
                add_colocated_as(
                    ctx,
                    Named::Primitive(first),
                    &mut work,
                    attr,
                    factor,
                    merging,
                    flags,
                );
            } else {
                merging.retain(|n| *n != other);
                return;
            }
        }
        Named::Primitive(ri) => {
            let theirs = current_scores(ctx, ri);
            add_matching(ctx, &mut work, &theirs, attr, factor, flags.nonnegative);
        }
    }
    if any_usable(ctx, &work) {
        let sign = if factor < 0.0 { -1.0 } else { 1.0 };
        let inner = Merge {
            rollback: true,
            ..flags
        };
        for c in with_this(ctx, other) {
            if !has_influence(ctx, &c) {
                continue;
            }
            let f = sign * c.score as f32 / INFINITY as f32;
            let attr = c.attr.as_deref();
            add_colocated_as(ctx, c.dependent, &mut work, attr, f, merging, inner);
        }
    } else if flags.rollback {
        merging.retain(|n| *n != other);
        return;
    }
    if flags.nonnegative {
        for v in work.values_mut().filter(|v| **v == UNUSABLE) {
            *v = 1;
        }
    }
    *nodes = work;
    merging.retain(|n| *n != other);
}

/// For a finite colocation with a clone whose instances are all placed: each instance's node
/// (None: not placed), the placed instances first, each in instance order; an instance group
/// counts as its first member. None for any other colocation.
fn clone_instance_nodes(ctx: &Ctx, c: &Coloc) -> Option<Vec<Option<usize>>> {
    let Named::Group(gi) = c.primary else {
        return None;
    };
    let obs = ctx.obs;
    if obs.groups[gi].clone.is_none() || c.score.abs() >= INFINITY {
        return None;
    }
    if !obs.groups[gi].members.iter().all(|&m| ctx.done[m]) {
        return None;
    }
    let mut nodes: Vec<Option<usize>> = crate::clone_groups::instances(obs, gi)
        .iter()
        .filter_map(|u| u.first())
        .map(|&m| ctx.desired.assigned[m])
        .collect();
    // (a stable sort: placed ones first)
    nodes.sort_by_key(|n| n.is_none());
    Some(nodes)
}

/// Where the primary of a colocation runs: a primitive's node; a group's last member's for a
/// mandatory colocation, its first member's otherwise. None inside: not placed yet.
/// The inner instance of bundle `bi`'s replica whose container is `container`.
fn obs_replica_child(ctx: &Ctx, bi: usize, container: usize) -> Option<usize> {
    ctx.obs.bundles[bi]
        .replicas
        .iter()
        .find(|r| r.container == container)?
        .child
}

fn primary_node(ctx: &Ctx, c: &Coloc) -> Option<Vec<usize>> {
    let ri = match c.primary {
        Named::Primitive(ri) => ri,
        // A clone's primary nodes are its instances'; a mandatory colocation counts only the
        // instances not blocked by a failure (Pacemaker 2.1.5, `pcmk__clone_apply_coloc_score`).
        Named::Group(gi) if ctx.obs.groups[gi].clone.is_some() => {
            let members = &ctx.obs.groups[gi].members;
            if !members.iter().all(|&m| ctx.done[m]) {
                return None;
            }
            // (a mandatory colocation with a bundle's Promoted role: only the containers of
            // the replicas whose inner instance is to be promoted, as
            // `pcmk__bundle_apply_coloc_score` collects them)
            let promoted = |m: usize| {
                let Some(bi) = c.promoted_bundle.filter(|_| c.score >= INFINITY) else {
                    return true;
                };
                obs_replica_child(ctx, bi, m).is_some_and(|child| {
                    ctx.desired.next_roles[child] == Some(crate::observed::Role::Promoted)
                })
            };
            return Some(
                members
                    .iter()
                    .filter(|&&m| c.score < INFINITY || !ctx.obs.resources[m].blocked)
                    .filter(|&&m| promoted(m))
                    .filter_map(|&m| ctx.desired.assigned[m])
                    .collect(),
            );
        }
        Named::Group(gi) => {
            let members = &ctx.obs.groups[gi].members;
            let m = if c.score >= INFINITY {
                members.last()
            } else {
                members.first()
            };
            *m?
        }
    };
    // A group still being placed, or a primitive not placed yet: nothing to apply.
    if !ctx.done[ri] {
        return None;
    }
    Some(ctx.desired.assigned[ri].into_iter().collect())
}

/// Records, per node, how `after` differs from `before`.
/// Takes `work` as primitive `ri`'s scores (a colocation kept), each change recorded as `why`.
fn adopt(
    ctx: &mut Ctx,
    ri: usize,
    steps: &mut Option<Vec<Step>>,
    scores: &mut BTreeMap<usize, i64>,
    work: BTreeMap<usize, i64>,
    why: &dyn Fn() -> String,
) {
    record_changes(steps, scores, &work, why);
    *scores = work;
    ctx.working[ri] = Some(scores.clone());
}

/// Notes colocation `c` among what shaped primitive `ri`'s scores, at `node` (the primary's,
/// `usize::MAX` for none), kept or rolled back.
fn note_colocation(ctx: &mut Ctx, ri: usize, c: &Coloc, node: usize) {
    ctx.desired.trace[ri].push(ScoreNote {
        node,
        delta: c.score,
        why: format!("colocation {}", c.id),
    });
}

pub(super) fn record_changes(
    steps: &mut Option<Vec<Step>>,
    before: &BTreeMap<usize, i64>,
    after: &BTreeMap<usize, i64>,
    why: &dyn Fn() -> String,
) {
    for (&ni, &v) in after {
        let old = before.get(&ni).copied();
        if old == Some(v) {
            continue;
        }
        let op = match old {
            Some(o) if o.abs() < INFINITY && v.abs() < INFINITY => StepOp::Add(v - o),
            _ => StepOp::Set(v),
        };
        record(steps, ni, op, why);
    }
}

/// The scores a group is sorted by when a placement strategy orders the resources: its last
/// member's, plus each member's before it in turn (through the internal colocations), stopping
/// at the first member whose scores would leave no usable node.
pub(super) fn sort_scores(ctx: &mut Ctx, gi: usize) -> BTreeMap<usize, i64> {
    let members = ctx.obs.groups[gi].members.clone();
    let Some((&last, before)) = members.split_last() else {
        return BTreeMap::new();
    };
    let mut scores = current_scores(ctx, last);
    if !any_usable(ctx, &scores) {
        return scores;
    }
    for &m in before.iter().rev() {
        let mut work = scores.clone();
        let theirs = current_scores(ctx, m);
        add_matching(ctx, &mut work, &theirs, None, 1.0, false);
        if !any_usable(ctx, &work) {
            break;
        }
        scores = work;
    }
    scores
}

/// Applies the "this with" colocations of primitive `ri` (a group member or not) to its scores,
/// each primary already placed (`pcmk__apply_coloc_to_weights`: an optional one rolled back when
/// it would leave no node with a non-negative score), then adds the scores of what is colocated
/// with it, scaled, recursively (`pcmk__add_colocated_node_scores`).
fn apply_colocations(
    ctx: &mut Ctx,
    ri: usize,
    this_with_list: Vec<Coloc>,
    scores: &mut BTreeMap<usize, i64>,
    steps: &mut Option<Vec<Step>>,
    notes: &mut Vec<String>,
    explaining: bool,
) {
    let obs = ctx.obs;
    ctx.working[ri] = Some(scores.clone());
    for c in this_with_list {
        // The primary is placed first (nothing to do when it is, or is being, placed).
        let primary = match c.primary {
            Named::Group(g) => Unit::Group(g),
            Named::Primitive(p) => match obs.resources[p].group {
                Some(g) => Unit::Group(g),
                None => Unit::Primitive(p),
            },
        };
        super::assign_unit(ctx, primary);
        // (a bundle's assignment includes its inner clone's, roles and all: what is colocated
        // with its Promoted role needs them)
        if let Some(child) = c.promoted_bundle.and_then(|bi| obs.bundles[bi].child) {
            super::assign_unit(ctx, Unit::Group(child));
        }
        // With one role of a promotable clone: the instances taking that role.
        if let Some((g, role)) = c
            .primary_role
            .filter(|&(g, _)| ctx.obs.groups[g].members.iter().all(|&m| ctx.done[m]))
        {
            let mut work = scores.clone();
            let rc = super::promotable::RoleColoc {
                score: c.score,
                attr: c.attr.as_deref(),
                dependent_role: c.dependent_role,
            };
            super::promotable::dependent_with_promotable(ctx, g, role, rc, &mut work);
            let revert = (c.dependent_role == Some(crate::observed::Role::Promoted)
                || (c.score < 0 && c.score > -INFINITY))
                && !any_usable(ctx, &work);
            if !revert {
                adopt(ctx, ri, steps, scores, work, &|| {
                    format!(
                        "colocation {} ({} with the {} instances)",
                        c.id,
                        score_text(c.score),
                        role.text()
                    )
                });
            }
            note_colocation(ctx, ri, &c, usize::MAX);
            continue;
        }
        // A finite colocation with a clone applies once per instance, as Pacemaker's
        // `pcmk__clone_apply_coloc_score` hands it to each instance in turn: one placed adds
        // the score where it is placed, one not placed takes a positive score off every node,
        // and each is rolled back when it would leave no node with a non-negative score.
        if let Some(instances) = clone_instance_nodes(ctx, &c) {
            for placed in instances {
                if placed.is_none() && c.score < 0 {
                    continue;
                }
                let mut work = scores.clone();
                for (&ni, v) in work.iter_mut() {
                    match placed {
                        None => *v = add_score(-c.score, *v),
                        Some(p) if same_attribute(obs, c.attr.as_deref(), ni, p) => {
                            *v = add_score(c.score, *v)
                        }
                        Some(_) => {}
                    }
                }
                let with_node = placed
                    .map(|p| obs.nodes[p].uname.clone())
                    .unwrap_or_else(|| "no node".into());
                if any_usable(ctx, &work) {
                    adopt(ctx, ri, steps, scores, work, &|| {
                        format!(
                            "colocation {} ({} with an instance on {with_node})",
                            c.id,
                            score_text(c.score)
                        )
                    });
                } else if explaining {
                    notes.push(format!(
                        "colocation {} with an instance on {with_node} is rolled back: it would leave no node with a non-negative score",
                        c.id
                    ));
                }
                note_colocation(ctx, ri, &c, placed.unwrap_or(usize::MAX));
            }
            continue;
        }
        let Some(placed) = primary_node(ctx, &c) else {
            if explaining {
                notes.push(format!(
                    "colocation {} is ignored: its primary is still being placed (a colocation loop)",
                    c.id
                ));
            }
            continue;
        };
        if placed.is_empty() && c.score < 0 {
            continue;
        }
        let alike = |ni: usize| {
            placed
                .iter()
                .any(|&p| same_attribute(obs, c.attr.as_deref(), ni, p))
        };
        // A clone primary applies a finite score once per instance placed alike (a unique
        // clone may place several on one node).
        let clone_primary = matches!(c.primary, Named::Group(g) if obs.groups[g].clone.is_some());
        let times = |ni: usize| {
            placed
                .iter()
                .filter(|&&p| same_attribute(obs, c.attr.as_deref(), ni, p))
                .count()
        };
        let mut work = scores.clone();
        for (&ni, v) in work.iter_mut() {
            if placed.is_empty() {
                *v = add_score(-c.score, *v);
            } else if alike(ni) {
                if c.score < INFINITY && clone_primary {
                    for _ in 0..times(ni) {
                        *v = add_score(c.score, *v);
                    }
                } else if c.score < INFINITY {
                    *v = add_score(c.score, *v);
                }
            } else if c.score >= INFINITY {
                *v = add_score(-c.score, *v);
            }
        }
        let with_node = placed
            .first()
            .map(|&p| obs.nodes[p].uname.clone())
            .unwrap_or_else(|| "no node".into());
        if c.score.abs() >= INFINITY || any_usable(ctx, &work) {
            adopt(ctx, ri, steps, scores, work, &|| {
                format!(
                    "colocation {} ({} with the primary on {with_node})",
                    c.id,
                    score_text(c.score)
                )
            });
        } else if explaining {
            notes.push(format!(
                "colocation {} is rolled back: it would leave no node with a non-negative score",
                c.id
            ));
        }
        note_colocation(ctx, ri, &c, placed.first().copied().unwrap_or(usize::MAX));
    }
    merge_with_this(ctx, ri, scores, steps, notes, explaining);
}

/// A bundle container assigned as an instance of its bundle: what is colocated with it (its
/// IP and connection, when they may influence it) pulls it, as `pcmk__primitive_assign` does.
pub(super) fn add_instance_dependents(ctx: &mut Ctx, ri: usize, scores: &mut BTreeMap<usize, i64>) {
    let obs = ctx.obs;
    let own = Named::Primitive(ri);
    let Some((bi, k)) = crate::bundles::replica_of(obs, ri) else {
        return;
    };
    let rep = &obs.bundles[bi].replicas[k];
    let connections = with_this(ctx, own).into_iter().filter(|c| {
        c.primary == own
            && matches!(c.dependent, Named::Primitive(d) if rep.ip == Some(d) || rep.remote == Some(d))
    });
    for c in connections.collect::<Vec<_>>() {
        if has_influence(ctx, &c) {
            merge_dependent(ctx, own, &c, scores);
        }
    }
}

/// Adds the scores of `c`'s dependent (and what is colocated with it) to its primary `own`'s,
/// scaled by the colocation's score.
fn merge_dependent(ctx: &mut Ctx, own: Named, c: &Coloc, scores: &mut BTreeMap<usize, i64>) {
    let factor = c.score as f32 / INFINITY as f32;
    let mut merging = vec![own];
    add_colocated(
        ctx,
        c.dependent,
        scores,
        c.attr.as_deref(),
        factor,
        &mut merging,
    );
}

/// "With this" colocations of primitive `ri`: what is colocated with it pulls it, scaled.
fn merge_with_this(
    ctx: &mut Ctx,
    ri: usize,
    scores: &mut BTreeMap<usize, i64>,
    steps: &mut Option<Vec<Step>>,
    notes: &mut Vec<String>,
    explaining: bool,
) {
    let obs = ctx.obs;
    for c in with_this(ctx, Named::Primitive(ri)) {
        if !has_influence(ctx, &c) {
            continue;
        }
        let before = scores.clone();
        merge_dependent(ctx, Named::Primitive(ri), &c, scores);
        let dependent = match c.dependent {
            Named::Primitive(d) => obs.resources[d].id.as_str(),
            Named::Group(g) => obs.groups[g].id.as_str(),
        };
        if before == *scores && explaining {
            notes.push(format!(
                "colocation {}: {dependent}'s scores are not added (no change, or they would leave no usable node)",
                c.id
            ));
        }
        ctx.working[ri] = Some(scores.clone());
        record_changes(steps, &before, scores, &|| {
            format!(
                "colocation {}: {dependent}'s scores (and what is colocated with it) times {}/INFINITY",
                c.id,
                score_text(c.score)
            )
        });
    }
}

/// Applies the colocations of primitive `ri`, not in a group, to its scores (see
/// `apply_colocations`); its primaries are already placed.
pub(super) fn colocate_primitive(
    ctx: &mut Ctx,
    ri: usize,
    scores: &mut BTreeMap<usize, i64>,
    steps: &mut Option<Vec<Step>>,
    notes: &mut Vec<String>,
) {
    let own = Named::Primitive(ri);
    let ids = [ctx.obs.resources[ri].id.as_str()];
    let mut list: Vec<Coloc> = super::positions_of(&ctx.colocations_by_rsc, &ids)
        .into_iter()
        .filter_map(|i| configured(ctx, &ctx.cib.colocations[i]))
        .filter(|c| c.dependent == own && c.primary != own)
        .collect();
    sort_by_other(ctx, &mut list, |c| c.primary);
    let explaining = steps.is_some();
    apply_colocations(ctx, ri, list, scores, steps, notes, explaining);
}

/// A group's (or clone's) own scores: the symmetric default, then the location constraints
/// naming it (`pcmk__group_assign`'s and `pcmk__clone_allocate`'s lines).
pub(super) fn location_scores(ctx: &Ctx, gi: usize) -> BTreeMap<usize, i64> {
    let obs = ctx.obs;
    // The group's own scores: location constraints naming the group.
    let mut group_scores: BTreeMap<usize, i64> = BTreeMap::new();
    if obs.symmetric {
        // (not a node made for an orphaned connection: see `base_scores_as`)
        for ni in (0..obs.nodes.len()).filter(|&ni| !is_orphan_node(&obs.nodes[ni])) {
            group_scores.insert(ni, obs.nodes[ni].weight);
        }
    }
    let gid = obs.groups[gi].id.as_str();
    for loc in ctx.cib.locations.iter().filter(|l| l.rsc == gid) {
        if loc
            .role
            .as_deref()
            .and_then(crate::observed::Role::parse)
            .is_some_and(|r| r != crate::observed::Role::Started)
        {
            continue;
        }
        if let Some(node) = &loc.node {
            if let Some(ni) = obs.node_index(node) {
                let score = loc
                    .score
                    .as_deref()
                    .and_then(crate::cib::parse_score)
                    .unwrap_or(0);
                let cur = group_scores
                    .get(&ni)
                    .copied()
                    .unwrap_or(obs.nodes[ni].weight);
                group_scores.insert(ni, add_score(cur, score));
            }
        } else {
            for rule in &loc.rules {
                // A rule for a role (Promoted, Unpromoted) counts when roles are chosen.
                if super::promotable::role_filter(rule.attr("role")).is_some() {
                    continue;
                }
                for ni in 0..obs.nodes.len() {
                    let attrs = &obs.nodes[ni].attrs;
                    if !crate::rules::eval_rule(rule, attrs, obs.now, None) {
                        continue;
                    }
                    let score = crate::rules::rule_score(rule, attrs);
                    let cur = group_scores
                        .get(&ni)
                        .copied()
                        .unwrap_or(obs.nodes[ni].weight);
                    group_scores.insert(ni, add_score(cur, score));
                }
            }
        }
    }
    // Exclusive discovery (Pacemaker's `apply_exclusive_discovery`, which also reaches a
    // collective resource's own table): a node no exclusive location of the group (or of
    // the clone it is an instance of) marks is banned. (`ctx.discoveries` is empty when no
    // location sets `resource-discovery`: then there is nothing to read.)
    if !ctx.discoveries.is_empty() {
        let mut ids = vec![gid];
        ids.extend(crate::clone_groups::parent_clone(obs, gi).map(|c| obs.groups[c].id.as_str()));
        if let (true, modes) = super::discovery_of(ctx.cib, obs, &ids, None) {
            for (ni, score) in group_scores.iter_mut() {
                if modes.get(ni) != Some(&super::DiscoverMode::Exclusive) {
                    *score = -INFINITY;
                }
            }
        }
    }
    group_scores
}

/// Places the members of group `gi` one by one (see the module's facts).
pub(super) fn assign_group(ctx: &mut Ctx, gi: usize, recording: bool) {
    let obs = ctx.obs;
    let members = obs.groups[gi].members.clone();
    let group_scores = location_scores(ctx, gi);
    ctx.desired.group_scores[gi] = group_scores;
    // Each member's scores before colocations (shown with the group's).
    let target = ctx.explain.filter(|_| recording);
    let mut base_steps: Option<Vec<Step>> = None;
    let mut pre: Vec<BTreeMap<usize, i64>> = Vec::with_capacity(members.len());
    for (k, &ri) in members.iter().enumerate() {
        ctx.recording = (target == Some(ri)).then(Vec::new);
        pre.push(base_scores_as(ctx, ri, k == 0));
        if let Some(steps) = ctx.recording.take() {
            base_steps = Some(steps);
        }
        ctx.desired.member_scores[ri] = pre[k].clone();
    }
    let fencing_unusable = no_fencing_device(obs);
    for (k, &ri) in members.iter().enumerate() {
        let r = &obs.resources[ri];
        let explaining = target == Some(ri);
        let mut steps: Option<Vec<Step>> = if explaining {
            Some(base_steps.take().unwrap_or_default())
        } else {
            None
        };
        let mut notes: Vec<String> = Vec::new();
        let mut scores = pre[k].clone();
        // "This with" colocations: the member before it, the group's (first member), its own.
        apply_colocations(
            ctx,
            ri,
            this_with(ctx, gi, k),
            &mut scores,
            &mut steps,
            &mut notes,
            explaining,
        );
        if super::stop_banned(obs, ri) {
            for ni in 0..obs.nodes.len() {
                scores.insert(ni, -INFINITY);
                record(&mut steps, ni, StepOp::Set(-INFINITY), || {
                    "it is to be stopped (target-role or orphan)".into()
                });
            }
        }
        // The choice: unmanaged members stay where they are; others take the best node.
        let current = r.running_on.first().copied();
        let unmanaged = !r.managed || fencing_unusable;
        // With a placement strategy, nodes without room are banned: room for the member and
        // every unplaced resource a mandatory colocation chain ties to it when some node has
        // that, else room for the member alone, the node with most free capacity preferred.
        let strategy = obs.placement_strategy.as_str();
        let mut banned: Vec<usize> = Vec::new();
        let mut prefer: Option<usize> = None;
        if strategy != "default" && !unmanaged {
            let mut need = colocated_need(ctx, Unit::Group(gi));
            for &m in &members[..k] {
                for (key, v) in &obs.resources[m].utilization {
                    *need.entry(key.clone()).or_insert(0) -= v;
                }
            }
            let usable: Vec<usize> = scores
                .iter()
                .filter(|&(&ni, &v)| v >= 0 && node_available(obs, ni))
                .map(|(&ni, _)| ni)
                .collect();
            let any_capable = usable.iter().any(|&ni| fits_need(ctx, &need, ni));
            for &ni in &usable {
                let fits = if any_capable {
                    fits_need(ctx, &need, ni)
                } else {
                    fits_need(ctx, &r.utilization, ni)
                };
                if !fits {
                    banned.push(ni);
                }
                if !any_capable
                    && prefer.is_none_or(|m| capacity_cmp(ctx, ni, m) == std::cmp::Ordering::Less)
                {
                    prefer = Some(ni);
                }
            }
        }
        let mut ranked: Vec<usize> = scores.keys().copied().collect();
        let weight = |ni: usize| {
            if node_available(obs, ni) && !banned.contains(&ni) {
                scores.get(&ni).copied().unwrap_or(-INFINITY)
            } else {
                -INFINITY
            }
        };
        ranked.sort_by(|&a, &b| {
            weight(b)
                .cmp(&weight(a))
                .then_with(|| match strategy {
                    "balanced" => capacity_cmp(ctx, a, b),
                    _ => std::cmp::Ordering::Equal,
                })
                .then_with(|| match strategy {
                    "minimal" => std::cmp::Ordering::Equal,
                    _ => ctx.num_resources[a]
                        .cmp(&ctx.num_resources[b])
                        .then((Some(b) == current).cmp(&(Some(a) == current))),
                })
                .then(obs.nodes[a].uname.cmp(&obs.nodes[b].uname))
        });
        let mut choice = ranked.first().copied();
        if let Some(best) = choice {
            let w = weight(best);
            let preferred = prefer.filter(|&p| weight(p) >= w.max(0));
            if let Some(p) = preferred {
                if explaining && p != best {
                    notes.push(format!(
                        "no node has room for everything colocated with it: {} has the most free capacity",
                        obs.nodes[p].uname
                    ));
                }
                choice = Some(p);
            } else if w > 0 {
                if let Some(cur) = current.filter(|&c| node_available(obs, c)) {
                    if ranked.iter().any(|&n| n == cur && weight(n) == w) {
                        choice = Some(cur);
                    }
                }
            }
            if weight(choice.unwrap_or(best)) < 0 {
                choice = None;
            }
        }
        if unmanaged {
            choice = current;
            if explaining {
                notes.push(if fencing_unusable {
                    "fencing is enabled but nothing can fence: resources stay where they are".into()
                } else {
                    "unmanaged (or blocked): it stays where it is".into()
                });
            }
        } else if obs.stop_all || target_stopped(obs, ri) {
            choice = None;
        }
        if choice.is_none() && k > 0 && explaining && !target_stopped(obs, ri) {
            notes.push(
                "it cannot run: colocated with the member before it, which cannot run where it could"
                    .into(),
            );
        }
        ctx.desired.assigned[ri] = choice;
        ctx.desired.scores[ri] = scores.clone();
        if let Some(ni) = choice {
            ctx.num_resources[ni] += 1;
            for (key, v) in &r.utilization {
                *ctx.util_used[ni].entry(key.clone()).or_insert(0) += *v;
            }
        }
        ctx.done[ri] = true;
        if let Some(steps) = steps {
            let filtered = (0..obs.nodes.len())
                .map(|ni| {
                    let why = super::filter_reason(obs, &scores, ni).or_else(|| {
                        banned
                            .contains(&ni)
                            .then(|| super::capacity_reason(strategy))
                    });
                    (ni, why)
                })
                .collect();
            let ranking = ranked.into_iter().filter(|&ni| weight(ni) >= 0).collect();
            ctx.trace = Some(Trace {
                rsc: ri,
                group: Some(gi),
                steps,
                filtered,
                ranking,
                notes,
                assigned: choice,
                clone: None,
                clone_steps: Vec::new(),
            });
        }
    }
}

/// Clone `gi`'s colocations as the dependent ("this with", by primary) or as the primary
/// ("with this", by dependent), sorted as Pacemaker keeps them.
fn clone_colocations(ctx: &Ctx, gi: usize, as_dependent: bool) -> Vec<Coloc> {
    let own = Named::Group(gi);
    let mut list: Vec<Coloc> = ctx
        .cib
        .colocations
        .iter()
        .filter_map(|c| configured(ctx, c))
        .filter(|c| c.dependent != c.primary)
        .filter(|c| {
            if as_dependent {
                c.dependent == own
            } else {
                c.primary == own
            }
        })
        .collect();
    if as_dependent {
        sort_by_other(ctx, &mut list, |c| c.primary);
    } else {
        sort_by_other(ctx, &mut list, |c| c.dependent);
    }
    list
}

/// What `pcmk__clone_allocate` adds to clone `gi`'s own scores before placing its instances:
/// the scores of each resource colocated with it (that may influence it), scaled, never taking
/// a node below zero.
pub(super) fn add_clone_dependents(ctx: &mut Ctx, gi: usize, nodes: &mut BTreeMap<usize, i64>) {
    let flags = Merge {
        nonnegative: true,
        rollback: true,
    };
    for c in clone_colocations(ctx, gi, false) {
        if !has_influence(ctx, &c) {
            continue;
        }
        let factor = c.score as f32 / INFINITY as f32;
        let mut merging = vec![Named::Group(gi)];
        let attr = c.attr.as_deref();
        add_colocated_as(ctx, c.dependent, nodes, attr, factor, &mut merging, flags);
    }
}

/// What promotable clone `gi`'s node weights take, when its roles are chosen, from what its
/// Promoted role is colocated with: their scores, scaled (an optional colocation rolled back
/// when it leaves no usable node; `apply_coloc_to_dependent`).
pub(super) fn add_promoted_primaries(ctx: &mut Ctx, gi: usize, nodes: &mut BTreeMap<usize, i64>) {
    for c in clone_colocations(ctx, gi, true) {
        if c.dependent_role != Some(crate::observed::Role::Promoted) {
            continue;
        }
        let flags = Merge {
            nonnegative: false,
            rollback: c.score < INFINITY,
        };
        let factor = c.score as f32 / INFINITY as f32;
        let mut merging = vec![Named::Group(gi)];
        let attr = c.attr.as_deref();
        add_colocated_as(ctx, c.primary, nodes, attr, factor, &mut merging, flags);
    }
}

/// What promotable clone `gi`'s node weights take, when its roles are chosen, from the
/// resources colocated with its Promoted role (that may influence it): their scores, scaled,
/// never taking a node below zero (`apply_coloc_to_primary`).
pub(super) fn add_promoted_dependents(ctx: &mut Ctx, gi: usize, nodes: &mut BTreeMap<usize, i64>) {
    let flags = Merge {
        nonnegative: true,
        rollback: true,
    };
    for c in clone_colocations(ctx, gi, false) {
        let promoted = matches!(c.primary_role, Some((_, crate::observed::Role::Promoted)));
        if !promoted || !has_influence(ctx, &c) {
            continue;
        }
        let factor = c.score as f32 / INFINITY as f32;
        let mut merging = vec![Named::Group(gi)];
        let attr = c.attr.as_deref();
        add_colocated_as(ctx, c.dependent, nodes, attr, factor, &mut merging, flags);
    }
}

/// What an instance of clone `gi` adds while it is placed (`pcmk__primitive_assign` with the
/// colocations its parent passed on): the scores of what is colocated with the clone, all of
/// them when not every node gets an instance (`all`), else only negative ones.
pub(super) fn add_parent_dependents(
    ctx: &mut Ctx,
    gi: usize,
    all: bool,
    nodes: &mut BTreeMap<usize, i64>,
) {
    for c in clone_colocations(ctx, gi, false) {
        if !(all || c.score < 0) || !has_influence(ctx, &c) {
            continue;
        }
        let factor = c.score as f32 / INFINITY as f32;
        let mut merging = vec![Named::Group(gi)];
        let attr = c.attr.as_deref();
        add_colocated(ctx, c.dependent, nodes, attr, factor, &mut merging);
    }
}

/// The score instance `ri` of clone `gi` has on its current node `ni` once the clone's
/// colocations are added (`cmp_instance_by_colocation`): the primaries' scores, then the
/// dependents' (positive only; those whose influence is off count only for an inactive
/// instance).
pub(super) fn colocated_score(ctx: &mut Ctx, gi: usize, ri: usize, ni: usize) -> i64 {
    let mut nodes = BTreeMap::from([(ni, ctx.obs.nodes[ni].weight)]);
    let plain = Merge {
        nonnegative: false,
        rollback: false,
    };
    for c in clone_colocations(ctx, gi, true) {
        let factor = c.score as f32 / INFINITY as f32;
        let mut merging = vec![Named::Group(gi)];
        let attr = c.attr.as_deref();
        add_colocated_as(
            ctx,
            c.primary,
            &mut nodes,
            attr,
            factor,
            &mut merging,
            plain,
        );
    }
    let positive = Merge {
        nonnegative: true,
        rollback: false,
    };
    let inactive = ctx.obs.resources[ri].running_on.is_empty();
    for c in clone_colocations(ctx, gi, false) {
        if !(c.influence || inactive) {
            continue;
        }
        let factor = c.score as f32 / INFINITY as f32;
        let mut merging = vec![Named::Group(gi)];
        let attr = c.attr.as_deref();
        add_colocated_as(
            ctx,
            c.dependent,
            &mut nodes,
            attr,
            factor,
            &mut merging,
            positive,
        );
    }
    nodes.get(&ni).copied().unwrap_or(0)
}
