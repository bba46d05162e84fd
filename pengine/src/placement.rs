//! Where each resource should run: filters then scores, each recording why; deterministic tie-break.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::cib::{Cib, INFINITY, add_score, parse_score};
use crate::observed::{Observed, Role, Top, is_orphan_node};
use crate::rules::{RscData, eval_rule, rule_score};

mod clones;
mod members;
mod promotable;
mod utilization;

/// One reason a node's score for a resource changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScoreNote {
    pub node: usize,
    pub delta: i64,
    pub why: String,
}

/// The assignment of every primitive, with the trace of why.
#[derive(Debug, Clone, Default)]
pub struct Desired {
    /// Assigned node per resource index (None: stopped).
    pub assigned: Vec<Option<usize>>,
    /// Final node scores per resource.
    pub scores: Vec<BTreeMap<usize, i64>>,
    pub trace: Vec<Vec<ScoreNote>>,
    /// Why a resource could not be placed.
    pub unplaced_reason: Vec<Option<String>>,
    /// Resources the scheduler leaves alone (unmanaged, or fencing enabled without a device).
    pub unmanaged: Vec<bool>,
    /// Top-level entries in processing order (priority, then score on the current node).
    pub order: Vec<Top>,
    /// Per group: its own node scores when its members are placed (location constraints on
    /// the group), as `crm_simulate -s` shows them (`pcmk__group_assign`).
    pub group_scores: Vec<BTreeMap<usize, i64>>,
    /// Per group member: its node scores before its colocations (locations, stickiness,
    /// failures), shown with the group's (`pcmk__group_assign`); for a bundle replica's IP and
    /// connection, their scores before they are assigned (`pcmk__bundle_allocate`); empty for
    /// other resources.
    pub member_scores: Vec<BTreeMap<usize, i64>>,
    /// Per resource: the role chosen for a promotable clone's instance (Promoted, Unpromoted or
    /// Stopped); None for every other resource (see `placement/promotable.rs`).
    pub next_roles: Vec<Option<Role>>,
    /// Promotable clone instances in promotion order: (instance, its node, promotion score),
    /// as `crm_simulate -s` shows them ("promotion score on").
    pub promotion_scores: Vec<(usize, Option<usize>, i64)>,
    /// Per member of an instance of a clone of a group: its scores once the clone's limits for
    /// that instance apply (`pcmk__group_assign`; see `placement/clones.rs`).
    pub instance_scores: BTreeMap<usize, BTreeMap<usize, i64>>,
    /// Scores of a clone instance's assignment to its current node given up because another
    /// node is better: Pacemaker shows them too, before the instance is assigned again.
    pub abandoned_scores: Vec<(usize, BTreeMap<usize, i64>)>,
    /// Per clone of groups: its own scores before what is colocated with it is added (its
    /// locations), which each instance group starts from (`pcmk__clone_allocate`'s lines for
    /// the instances; keyed by an instance group of a promotable clone: those plus its
    /// promotion scores).
    pub clone_base_scores: BTreeMap<usize, BTreeMap<usize, i64>>,
    /// Per resource: the nodes its location constraints' `resource-discovery` keeps it from
    /// being probed on (see `discovery`).
    pub no_discovery: Vec<std::collections::BTreeSet<usize>>,
    /// Per bundle (keyed by its containers' clone): its own allowed-node scores, what
    /// `pcmk__bundle_allocate` shows for it (locations and exclusive discovery; never what is
    /// colocated with it).
    pub bundle_own_scores: BTreeMap<usize, BTreeMap<usize, i64>>,
    /// Per bundle: how many times Pacemaker runs its assignment (`crate::bundles::assign_calls`),
    /// each showing the `pcmk__bundle_allocate` block again.
    pub bundle_assign_calls: Vec<usize>,
    /// Per resource: a location constraint on it (or its group, clone or bundle) says
    /// `resource-discovery=exclusive` (Pacemaker's `exclusive_discover`; see `discovery`).
    pub exclusive_discovery: Vec<bool>,
    /// Per resource: the bundle guest nodes a location constraint on it (or its group, clone
    /// or bundle) names or matches, which are among its allowed nodes (see `located_guests`).
    pub location_guests: Vec<BTreeSet<usize>>,
    /// Per group (or clone): the same for the location constraints on it (or its clone).
    pub group_location_guests: Vec<BTreeSet<usize>>,
    /// Clone or bundle instances (primitives) left unassigned because no instance of a clone
    /// or bundle they are mandatorily colocated with could be paired with them ("Cannot
    /// pair"): stopped, so banned from every node of the cluster, guest nodes included.
    pub unpaired: BTreeSet<usize>,
}

/// One change to a node's score while a resource is placed (recorded only when explaining).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub node: usize,
    pub op: StepOp,
    pub why: String,
}

/// How a `Step` changes the score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepOp {
    /// The score becomes this value.
    Set(i64),
    /// This value is added (`add_score`; a node without a score counts as 0).
    Add(i64),
}

/// Why one resource goes where it goes: every score change of its placement unit in order, what
/// the filters said per node, and the choice. Filled by `place_traced` for one resource only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub struct Trace {
    /// The resource explained.
    pub rsc: usize,
    /// Its group, when it is placed with one.
    pub group: Option<usize>,
    /// Score changes of the unit, in order: folding them from no score gives the scores of
    /// `Desired::scores` (a node left without a score is -INFINITY).
    pub steps: Vec<Step>,
    /// Per node after scoring: why it is not a candidate (None: it is one).
    pub filtered: Vec<(usize, Option<String>)>,
    /// Candidates, best first (score, then the tie-breaks of `assign_unit`).
    pub ranking: Vec<usize>,
    /// What overrode the best candidate, or happened to the resource afterwards.
    pub notes: Vec<String>,
    /// Where the resource is assigned (None: stopped).
    pub assigned: Option<usize>,
    /// The clone it is an instance of (or a member of an instance of), placed with it.
    pub clone: Option<usize>,
    /// The clone's own score changes, in order (`pcmk__clone_allocate`'s lines for the clone):
    /// its locations, a migration-threshold reached by an instance, what is colocated with it.
    pub clone_steps: Vec<Step>,
}

/// Records a step when a trace is being recorded.
fn record(steps: &mut Option<Vec<Step>>, node: usize, op: StepOp, why: impl FnOnce() -> String) {
    if let Some(steps) = steps {
        steps.push(Step {
            node,
            op,
            why: why(),
        });
    }
}

/// A location constraint's `resource-discovery`, ordered as Pacemaker 2.1.5 ranks them (the
/// highest applied to a node wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DiscoverMode {
    Always,
    Never,
    Exclusive,
}

/// The ids whose location constraints apply to primitive `ri`: its own, its group's and, for a
/// clone of a group's instance member, the clone's.
fn location_ids(obs: &Observed, ri: usize) -> Vec<&str> {
    let r = &obs.resources[ri];
    let mut ids = vec![r.id.as_str()];
    ids.extend(r.group.map(|g| obs.groups[g].id.as_str()));
    ids.extend(
        r.group
            .and_then(|g| crate::clone_groups::parent_clone(obs, g))
            .map(|c| obs.groups[c].id.as_str()),
    );
    // A bundle's locations apply to each replica's container (its group is named as the
    // bundle) and IP (`pcmk__bundle_rsc_location`).
    ids.extend(
        crate::bundles::replica_of(obs, ri)
            .filter(|&(bi, k)| obs.bundles[bi].replicas[k].ip == Some(ri))
            .map(|(bi, _)| obs.bundles[bi].id.as_str()),
    );
    ids
}

/// Resource discovery for primitive `ri` (Pacemaker's `rsc_discover_mode` per allowed node and
/// `exclusive_discover`): the mode each node got from the location constraints on the primitive,
/// its group or its clone (or its bundle, for a container or IP), and whether one of them says
/// "exclusive". With exclusive discovery a node not marked exclusive gets -INFINITY
/// (`apply_exclusive_discovery`) and is not probed; a node marked "never" is not probed.
pub fn discovery(cib: &Cib, obs: &Observed, ri: usize) -> (bool, BTreeMap<usize, DiscoverMode>) {
    let r = &obs.resources[ri];
    discovery_of(
        cib,
        obs,
        &location_ids(obs, ri),
        Some(RscData {
            params: &r.params,
            meta: &r.meta,
        }),
    )
}

/// `discovery` for the location constraints naming any of `ids` (rules evaluated with `rsc`).
pub(crate) fn discovery_of(
    cib: &Cib,
    obs: &Observed,
    ids: &[&str],
    rsc: Option<RscData>,
) -> (bool, BTreeMap<usize, DiscoverMode>) {
    let mut exclusive = false;
    let mut modes: BTreeMap<usize, DiscoverMode> = BTreeMap::new();
    for loc in cib
        .locations
        .iter()
        .filter(|l| ids.contains(&l.rsc.as_str()))
    {
        let mode = match loc.discovery.as_deref() {
            Some(m) if m.eq_ignore_ascii_case("never") => DiscoverMode::Never,
            Some(m) if m.eq_ignore_ascii_case("exclusive") => DiscoverMode::Exclusive,
            _ => continue,
        };
        exclusive |= mode == DiscoverMode::Exclusive;
        for ni in location_nodes(obs, loc, rsc) {
            let m = modes.entry(ni).or_insert(DiscoverMode::Always);
            *m = (*m).max(mode);
        }
    }
    (exclusive, modes)
}

/// The nodes location constraint `loc` applies to when roles are not yet chosen: the node it
/// names, or those one of its rules (without a role) matches; none for a location of a role
/// other than Started.
fn location_nodes(obs: &Observed, loc: &crate::cib::Location, rsc: Option<RscData>) -> Vec<usize> {
    if loc
        .role
        .as_deref()
        .and_then(Role::parse)
        .is_some_and(|role| role != Role::Started)
    {
        return Vec::new();
    }
    match &loc.node {
        Some(node) => obs.node_index(node).into_iter().collect(),
        None => (0..obs.nodes.len())
            .filter(|&ni| {
                loc.rules.iter().any(|rule| {
                    promotable::role_filter(rule.attr("role")).is_none()
                        && eval_rule(rule, &obs.nodes[ni].attrs, obs.now, rsc)
                })
            })
            .collect(),
    }
}

/// The bundle guest nodes (`guests`) among the allowed nodes of what the location
/// constraints on `ids` name: a guest node is never allowed by default (Pacemaker's
/// `resource_node_score` skips the symmetric default on a node of discovery "never"), but a
/// location naming it or a rule matching it adds it, whatever its score.
fn located_guests(
    cib: &Cib,
    obs: &Observed,
    ids: &[&str],
    rsc: Option<RscData>,
    guests: &BTreeSet<usize>,
) -> BTreeSet<usize> {
    if guests.is_empty() {
        return BTreeSet::new();
    }
    cib.locations
        .iter()
        .filter(|l| ids.contains(&l.rsc.as_str()))
        .flat_map(|loc| location_nodes(obs, loc, rsc))
        .filter(|ni| guests.contains(ni))
        .collect()
}

/// A placement unit: a primitive or a whole group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Primitive(usize),
    Group(usize),
}

struct Ctx<'a> {
    obs: &'a Observed,
    cib: &'a Cib,
    desired: Desired,
    num_resources: Vec<usize>,
    util_used: Vec<BTreeMap<String, i64>>,
    done: Vec<bool>,
    in_progress: Vec<bool>,
    /// A primitive being placed: its scores so far, its colocations applied one by one; what
    /// is placed meanwhile (its primaries) sees these, as Pacemaker's allowed-node table.
    working: Vec<Option<BTreeMap<usize, i64>>>,
    /// Per group: a promotable clone's node weights once its roles are chosen (Pacemaker
    /// changes the clone's allowed-node table then); what is merged with the clone later
    /// sees these.
    role_weights: Vec<Option<BTreeMap<usize, i64>>>,
    /// Per resource, its `discovery` (empty when no location sets `resource-discovery`):
    /// computed once, as it reads every location.
    discoveries: Vec<(bool, BTreeMap<usize, DiscoverMode>)>,
    /// Constraint positions in the CIB by the resource id they name, built once per `place`, so
    /// each resource looks only at its own constraints.
    locations_by_rsc: HashMap<&'a str, Vec<usize>>,
    colocations_by_rsc: HashMap<&'a str, Vec<usize>>,
    colocations_by_with: HashMap<&'a str, Vec<usize>>,
    /// The resource to explain, and the steps `base_scores` records while one is wanted.
    explain: Option<usize>,
    recording: Option<Vec<Step>>,
    trace: Option<Trace>,
    /// While a clone places the instance explained: its score changes (`placement/clones.rs`).
    instance_recording: Option<Vec<Step>>,
}

/// Positions of the items per key, in item order.
fn positions_by<'a, T>(
    items: &'a [T],
    key: impl Fn(&'a T) -> &'a str,
) -> HashMap<&'a str, Vec<usize>> {
    let mut map: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        map.entry(key(item)).or_default().push(i);
    }
    map
}

/// The positions listed under any of `ids`, in configuration order, each once.
fn positions_of(map: &HashMap<&str, Vec<usize>>, ids: &[&str]) -> Vec<usize> {
    let mut out: Vec<usize> = ids
        .iter()
        .filter_map(|id| map.get(id))
        .flatten()
        .copied()
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn unit_of(obs: &Observed, id: &str) -> Option<Unit> {
    if let Some(gi) = obs.group_index(id) {
        return Some(Unit::Group(gi));
    }
    obs.rsc_index(id).map(|ri| match obs.resources[ri].group {
        Some(gi) => Unit::Group(gi),
        None => Unit::Primitive(ri),
    })
}

fn unit_members(obs: &Observed, u: Unit) -> Vec<usize> {
    match u {
        Unit::Primitive(ri) => vec![ri],
        Unit::Group(gi) => obs.groups[gi].members.clone(),
    }
}

fn unit_key(obs: &Observed, u: Unit) -> usize {
    match u {
        Unit::Primitive(ri) => ri,
        Unit::Group(gi) => obs.groups[gi]
            .members
            .first()
            .copied()
            .unwrap_or(usize::MAX),
    }
}

/// Each resource's `discovery`, or none at all when no location sets `resource-discovery`.
fn discoveries(cib: &Cib, obs: &Observed) -> Vec<(bool, BTreeMap<usize, DiscoverMode>)> {
    if cib.locations.iter().all(|l| l.discovery.is_none()) {
        return Vec::new();
    }
    (0..obs.resources.len())
        .map(|ri| discovery(cib, obs, ri))
        .collect()
}

/// Per resource, the nodes it is not probed on because of `resource-discovery` (Pacemaker's
/// `pcmk__probe_rsc_on_node`), from `discoveries`. A bundle's inner instances are left to
/// `crate::bundles` (probed on their guest node only).
fn no_discovery(
    obs: &Observed,
    discoveries: &[(bool, BTreeMap<usize, DiscoverMode>)],
) -> Vec<std::collections::BTreeSet<usize>> {
    (0..obs.resources.len())
        .map(|ri| {
            let inner = |ri: usize| {
                crate::bundles::replica_of(obs, ri)
                    .is_some_and(|(bi, k)| obs.bundles[bi].replicas[k].child == Some(ri))
            };
            let Some(&(exclusive, ref modes)) = discoveries.get(ri).filter(|_| !inner(ri)) else {
                return std::collections::BTreeSet::new();
            };
            (0..obs.nodes.len())
                .filter(|ni| match modes.get(ni) {
                    Some(DiscoverMode::Never) => true,
                    Some(DiscoverMode::Exclusive) => false,
                    _ => exclusive,
                })
                .collect()
        })
        .collect()
}

/// Whether a node can host resources at all.
pub fn node_available(obs: &Observed, ni: usize) -> bool {
    let n = &obs.nodes[ni];
    n.online && !n.unclean && !n.standby && !n.maintenance && !n.shutdown && !n.pending
}

/// Pacemaker's `rsc_avoids_remote_nodes`: remote connections, fencing devices and guest nodes'
/// containers (not a bundle's: its connection may nest) get -INFINITY on every remote or guest
/// node they are allowed on (that has a connection resource: a leftover remote node entry whose
/// connection is gone is not avoided, except by a bundle's connection, which `pe__unpack_bundle`
/// bans from every remote or guest node).
fn avoid_remote_nodes(ctx: &mut Ctx, ri: usize, scores: &mut BTreeMap<usize, i64>) {
    let obs = ctx.obs;
    let r = &obs.resources[ri];
    let bundle_connection = crate::bundles::is_replica_connection(obs, ri);
    let remote_nodes: Vec<usize> = (0..obs.nodes.len())
        .filter(|&ni| {
            obs.nodes[ni]
                .remote
                .as_ref()
                .is_some_and(|rn| rn.connection.is_some() || bundle_connection)
        })
        .collect();
    // (the guest test scans every resource: only when there is a remote node to avoid)
    if remote_nodes.is_empty()
        || !(r.remote_node.is_some()
            || r.is_stonith()
            || (crate::guest::contains_guest(obs, ri)
                && !crate::bundles::is_replica_container(obs, ri)))
    {
        return;
    }
    for ni in remote_nodes {
        let Some(cur) = scores.get(&ni).copied() else {
            continue;
        };
        scores.insert(ni, add_score(cur, -INFINITY));
        record(&mut ctx.recording, ni, StepOp::Add(-INFINITY), || {
            "remote connections, fencing devices and guest containers avoid remote nodes".into()
        });
    }
}

/// A filler whose container is a remote connection or holds a guest node runs on that node
/// only: every other node gets -INFINITY (Pacemaker 2.1.5, instead of the colocation with the
/// container; see `crate::container::forced_connection`).
fn force_onto_remote(ctx: &mut Ctx, ri: usize, scores: &mut BTreeMap<usize, i64>) {
    let obs = ctx.obs;
    let Some(conn) = crate::container::forced_connection(obs, ri) else {
        return;
    };
    for (&ni, score) in scores.iter_mut() {
        let on_it = obs.nodes[ni]
            .remote
            .as_ref()
            .is_some_and(|rn| rn.connection == Some(conn));
        if !on_it {
            *score = -INFINITY;
            record(&mut ctx.recording, ni, StepOp::Set(-INFINITY), || {
                "its container holds a remote node: it runs there only".into()
            });
        }
    }
}

/// Per-resource location scores (constraints, stickiness, failures), before colocation.
fn base_scores(ctx: &mut Ctx, ri: usize) -> BTreeMap<usize, i64> {
    base_scores_as(ctx, ri, true)
}

/// `base_scores`, with the group's location constraints counted in full (`group_full`) or, as
/// Pacemaker 2.1.5 does for the members after the first of a colocated group, only as allowing
/// their nodes (score 0): the first member's scores already carry them.
fn base_scores_as(ctx: &mut Ctx, ri: usize, group_full: bool) -> BTreeMap<usize, i64> {
    let obs = ctx.obs;
    let r = &obs.resources[ri];
    let mut scores: BTreeMap<usize, i64> = BTreeMap::new();
    let mut notes = Vec::new();
    if obs.symmetric {
        // (a node made for an orphaned connection met in the status is not among the allowed
        // nodes of a resource unpacked before it: only an orphan, made with it, has it)
        for ni in (0..obs.nodes.len()).filter(|&ni| r.orphan || !is_orphan_node(&obs.nodes[ni])) {
            let weight = obs.nodes[ni].weight;
            scores.insert(ni, weight);
            record(&mut ctx.recording, ni, StepOp::Set(weight), || {
                "symmetric-cluster: every node starts at its node score (0 unless configured)"
                    .into()
            });
        }
    }
    // A guest node's connection may run wherever its container may (see `crate::guest`).
    if !obs.symmetric && crate::guest::is_connection(r) {
        for ni in 0..obs.nodes.len() {
            if let std::collections::btree_map::Entry::Vacant(e) = scores.entry(ni) {
                e.insert(0);
                record(&mut ctx.recording, ni, StepOp::Set(0), || {
                    "a guest node's connection may run wherever its container may".into()
                });
            }
        }
    }
    // Remote connections, fencing devices and guest nodes' containers never run on remote
    // nodes (of those allowed: in an asymmetric cluster, once the locations are in).
    if obs.symmetric {
        avoid_remote_nodes(ctx, ri, &mut scores);
        force_onto_remote(ctx, ri, &mut scores);
    }
    // An unmanaged resource found active on a node is held there with INFINITY, as Pacemaker
    // 2.1.5 records it when unpacking the status: a blocked one only on the nodes recorded
    // once it was blocked.
    if !r.managed {
        let held_from = r.blocked_after.unwrap_or(0);
        for &ni in r.running_on.iter().skip(held_from) {
            let cur = scores.get(&ni).copied().unwrap_or(obs.nodes[ni].weight);
            scores.insert(ni, add_score(cur, INFINITY));
            record(&mut ctx.recording, ni, StepOp::Add(INFINITY), || {
                "unmanaged and active here".into()
            });
        }
    }
    let cib = ctx.cib;
    let ids = location_ids(obs, ri);
    for loc in positions_of(&ctx.locations_by_rsc, &ids)
        .into_iter()
        .map(|i| &cib.locations[i])
    {
        if let Some(role) = loc.role.as_deref().and_then(Role::parse) {
            if role != Role::Started {
                continue;
            }
        }
        let allow_only = !group_full && loc.rsc != r.id;
        if let Some(node) = &loc.node {
            let Some(ni) = obs.node_index(node) else {
                continue;
            };
            let score = if allow_only {
                0
            } else {
                loc.score.as_deref().and_then(parse_score).unwrap_or(0)
            };
            let cur = scores.get(&ni).copied().unwrap_or(obs.nodes[ni].weight);
            scores.insert(ni, add_score(cur, score));
            record(&mut ctx.recording, ni, StepOp::Add(score), || {
                format!("location {} ({} on {})", loc.id, loc.rsc, node)
            });
            notes.push(ScoreNote {
                node: ni,
                delta: score,
                why: format!("location {}", loc.id),
            });
        } else {
            // value-source="param" reads the parameters as evaluated for each node (instance
            // attribute sets with rules differ per node), merged once per node per location.
            let per_node_params: Vec<BTreeMap<String, String>> = if r
                .param_sets
                .iter()
                .any(|set| !set.rules.is_empty())
            {
                obs.nodes
                    .iter()
                    .map(|n| {
                        let mut p = BTreeMap::new();
                        crate::observed::merge_sets(&mut p, &r.param_sets, obs.now, Some(&n.attrs));
                        p
                    })
                    .collect()
            } else {
                Vec::new()
            };
            for rule in &loc.rules {
                // A rule for a role (Promoted, Unpromoted) counts when roles are chosen.
                if promotable::role_filter(rule.attr("role")).is_some() {
                    continue;
                }
                let score_text = rule.attr("score");
                let score_attr = rule.attr("score-attribute");
                for ni in 0..obs.nodes.len() {
                    let attrs = &obs.nodes[ni].attrs;
                    let node_params = per_node_params.get(ni);
                    if !eval_rule(
                        rule,
                        attrs,
                        obs.now,
                        Some(RscData {
                            params: node_params.unwrap_or(&r.params),
                            meta: &r.meta,
                        }),
                    ) {
                        continue;
                    }
                    let score = if allow_only {
                        0
                    } else {
                        rule_score(rule, attrs)
                    };
                    let cur = scores.get(&ni).copied().unwrap_or(obs.nodes[ni].weight);
                    scores.insert(ni, add_score(cur, score));
                    record(&mut ctx.recording, ni, StepOp::Add(score), || {
                        let rule_id = rule.attr("id").unwrap_or("");
                        match score_attr.filter(|_| score_text.is_none()) {
                            Some(a) => format!(
                                "location {} rule {rule_id} matches (score from attribute {a})",
                                loc.id
                            ),
                            None => format!("location {} rule {rule_id} matches", loc.id),
                        }
                    });
                    notes.push(ScoreNote {
                        node: ni,
                        delta: score,
                        why: format!("location rule {}", loc.id),
                    });
                }
            }
        }
    }
    if !obs.symmetric {
        avoid_remote_nodes(ctx, ri, &mut scores);
    }
    // Exclusive discovery: the nodes no exclusive location marks are banned.
    if let Some((true, modes)) = ctx.discoveries.get(ri) {
        for (&ni, score) in scores.iter_mut() {
            if modes.get(&ni) != Some(&DiscoverMode::Exclusive) {
                *score = -INFINITY;
                record(&mut ctx.recording, ni, StepOp::Set(-INFINITY), || {
                    "resource-discovery=exclusive: no exclusive location marks this node".into()
                });
                notes.push(ScoreNote {
                    node: ni,
                    delta: -INFINITY,
                    why: "exclusive discovery".into(),
                });
            }
        }
    }
    // History-derived bans.
    for (node, score, why) in &r.history_bans {
        match node {
            Some(ni) => {
                let cur = scores.get(ni).copied().unwrap_or(obs.nodes[*ni].weight);
                scores.insert(*ni, add_score(cur, *score));
                record(&mut ctx.recording, *ni, StepOp::Add(*score), || {
                    format!("history: {why}")
                });
                notes.push(ScoreNote {
                    node: *ni,
                    delta: *score,
                    why: why.clone(),
                });
            }
            None => {
                for ni in 0..obs.nodes.len() {
                    scores.insert(ni, -INFINITY);
                    record(&mut ctx.recording, ni, StepOp::Set(-INFINITY), || {
                        format!("history, banned everywhere: {why}")
                    });
                }
            }
        }
    }
    // Failures: migration-threshold.
    let threshold = r.migration_threshold();
    let mut limits = fail_limits(obs, ri);
    // (an anonymous clone's instance reaching it bans the whole clone from the node, every
    // instance and member: Pacemaker bans the instance's top parent)
    let anonymous = crate::clone_groups::clone_of(obs, ri).filter(|&c| {
        obs.groups[c]
            .clone
            .as_ref()
            .is_some_and(|spec| !spec.unique)
    });
    if let Some(c) = anonymous {
        for m in crate::clone_groups::instances(obs, c).into_iter().flatten() {
            for (ni, count) in fail_limits(obs, m).into_iter().filter(|_| m != ri) {
                if !limits.iter().any(|&(n, _)| n == ni) {
                    limits.push((ni, count));
                }
            }
        }
    }
    for (ni, count) in limits {
        scores.insert(ni, -INFINITY);
        record(&mut ctx.recording, ni, StepOp::Set(-INFINITY), || {
            format!("fail count {count} reached migration-threshold={threshold}")
        });
        notes.push(ScoreNote {
            node: ni,
            delta: -INFINITY,
            why: "__fail_limit__ (migration-threshold)".into(),
        });
    }
    // Stickiness on the single current node.
    let stickiness = r.stickiness();
    // Pacemaker 2.1.5 applies it to a managed resource active on one node, failed or not;
    // a stickiness below 1 is none.
    if r.managed && stickiness > 0 && r.running_on.len() == 1 {
        let ni = r.running_on[0];
        if let Some(cur) = scores.get(&ni).copied() {
            scores.insert(ni, add_score(cur, stickiness));
            record(&mut ctx.recording, ni, StepOp::Add(stickiness), || {
                "resource-stickiness (it runs here)".into()
            });
            notes.push(ScoreNote {
                node: ni,
                delta: stickiness,
                why: "resource-stickiness".into(),
            });
        } else if obs.symmetric {
            scores.insert(ni, stickiness);
            record(&mut ctx.recording, ni, StepOp::Set(stickiness), || {
                "resource-stickiness (it runs here)".into()
            });
        }
    }
    // Node health.
    let strategy = obs
        .option("node-health-strategy")
        .unwrap_or("none")
        .to_ascii_lowercase();
    if strategy != "none" {
        for ni in 0..obs.nodes.len() {
            let s = health_score(obs, ni, &strategy);
            // A negative health does not apply to a resource with allow-unhealthy-nodes.
            if s != 0 && !(s < 0 && r.meta_bool("allow-unhealthy-nodes", false)) {
                if let Some(cur) = scores.get(&ni).copied() {
                    scores.insert(ni, add_score(cur, s));
                    record(&mut ctx.recording, ni, StepOp::Add(s), || {
                        format!("node-health-strategy={strategy}")
                    });
                }
            }
        }
    }
    ctx.desired.trace[ri].extend(notes);
    scores
}

fn health_score(obs: &Observed, ni: usize, strategy: &str) -> i64 {
    let opt = |n: &str, d: i64| obs.option(n).and_then(parse_score).unwrap_or(d);
    let (red, yellow, green) = match strategy {
        "migrate-on-red" => (-INFINITY, 0, 0),
        "only-green" => (-INFINITY, -INFINITY, 0),
        _ => (
            opt("node-health-red", 0),
            opt("node-health-yellow", 0),
            opt("node-health-green", 0),
        ),
    };
    let mut total = if strategy == "progressive" || strategy == "custom" {
        opt("node-health-base", 0)
    } else {
        0
    };
    for (k, v) in &obs.nodes[ni].attrs {
        if !k.starts_with("#health") {
            continue;
        }
        let s = match v.to_ascii_lowercase().as_str() {
            "red" => red,
            "yellow" => yellow,
            "green" => green,
            other => parse_score(other).unwrap_or(0),
        };
        total = add_score(total, s);
    }
    total
}

/// Fencing is enabled but nothing can fence: no device and no watchdog (SBD).
fn no_fencing_device(obs: &Observed) -> bool {
    obs.stonith_enabled
        && !obs.have_stonith_resource
        && !obs
            .option("have-watchdog")
            .map(crate::cib::is_true)
            .unwrap_or(false)
}

fn unit_blocked_or_unmanaged(obs: &Observed, u: Unit) -> bool {
    unit_members(obs, u)
        .iter()
        .any(|&ri| !obs.resources[ri].managed)
}

fn target_stopped(obs: &Observed, ri: usize) -> bool {
    let r = &obs.resources[ri];
    r.target_role == Some(Role::Stopped)
        || r.next_role == Some(Role::Stopped)
        || r.orphan
        || obs.stop_all
}

/// The nodes (with the fail count) where resource `ri` reached its migration-threshold: unexpired
/// failures only, a container's count including its fillers' (see `container`), none where the
/// fail count is cleared in this transition (found while unpacking).
pub(crate) fn fail_limits(obs: &Observed, ri: usize) -> Vec<(usize, i64)> {
    let r = &obs.resources[ri];
    let threshold = r.migration_threshold();
    if threshold <= 0 {
        return Vec::new();
    }
    let failed_on: std::collections::BTreeSet<usize> = std::iter::once(ri)
        .chain(r.fillers.iter().copied())
        .flat_map(|fi| obs.resources[fi].fail_count.keys().copied())
        .collect();
    failed_on
        .into_iter()
        .filter(|ni| !r.clear_failcount_on.contains(ni))
        .map(|ni| (ni, crate::container::failcount_with_fillers(obs, ri, ni)))
        .filter(|&(_, count)| count >= threshold)
        .collect()
}

/// Whether the resource's next role is Stopped: target-role, or a failure with on-fail=stop.
/// Whether resource `ri` is banned from every node because it is to be stopped (target-role,
/// next role or orphan): `stop-all-resources` alone leaves its scores alone, Pacemaker only
/// leaves it unassigned.
/// The ban (`resource_location` on every node) also gives it the nodes it had no score on,
/// guest nodes included.
pub(crate) fn stop_banned(obs: &Observed, ri: usize) -> bool {
    next_role_stopped(obs, ri) || obs.resources[ri].orphan
}

fn next_role_stopped(obs: &Observed, ri: usize) -> bool {
    let r = &obs.resources[ri];
    r.target_role == Some(Role::Stopped) || r.next_role == Some(Role::Stopped)
}

fn assign_unit(ctx: &mut Ctx, u: Unit) {
    let key = unit_key(ctx.obs, u);
    if key == usize::MAX || ctx.done[key] || ctx.in_progress[key] {
        return;
    }
    ctx.in_progress[key] = true;
    let obs = ctx.obs;
    let members = unit_members(obs, u);
    let unit_ids: Vec<String> = match u {
        Unit::Primitive(ri) => vec![obs.resources[ri].id.clone()],
        Unit::Group(gi) => {
            let mut v = vec![obs.groups[gi].id.clone()];
            v.extend(
                obs.groups[gi]
                    .members
                    .iter()
                    .map(|&m| obs.resources[m].id.clone()),
            );
            v
        }
    };
    // Colocations where this unit depends on another: place that one first.
    let cib = ctx.cib;
    let id_strs: Vec<&str> = unit_ids.iter().map(String::as_str).collect();
    let cols: Vec<(usize, Unit, i64)> = positions_of(&ctx.colocations_by_rsc, &id_strs)
        .into_iter()
        .map(|i| (i, &cib.colocations[i]))
        .filter_map(|(i, c)| {
            unit_of(obs, &c.with_rsc)
                .filter(|w| *w != u)
                .map(|w| (i, w, c.score))
        })
        .collect();
    // Primaries are placed in order of their priority (groups before primitives when equal),
    // configuration order breaking ties: the one placed first takes the capacity it needs.
    let mut cols = cols;
    cols.sort_by_key(|(_, w, _)| {
        (
            std::cmp::Reverse(unit_priority(obs, *w)),
            !matches!(w, Unit::Group(_)),
        )
    });
    // A clone's primaries are placed first; a group member or a primitive places each as it
    // applies the colocation, in the primaries' priority order, so a primary placed later sees
    // the colocations applied before it (`members`; colocation-priority-group).
    if matches!(u, Unit::Group(gi) if obs.groups[gi].clone.is_some()) {
        for (_, w, _) in &cols {
            assign_unit(ctx, *w);
        }
    }
    // Explaining one of these members: record every score change (see `Trace`).
    let recording = ctx.explain.is_some_and(|t| members.contains(&t));
    if let Unit::Group(gi) = u {
        if obs.groups[gi].clone.is_some() {
            clones::assign_clone(ctx, gi);
        } else {
            members::assign_group(ctx, gi, recording);
        }
        for &ri in &members {
            ctx.done[ri] = true;
        }
        ctx.in_progress[key] = false;
        return;
    }
    // A primitive (a group was placed member by member above): its own scores.
    let ri = members[0];
    ctx.recording = recording.then(Vec::new);
    let mut scores: BTreeMap<usize, i64> = base_scores(ctx, ri);
    let mut steps: Option<Vec<Step>> = ctx.recording.take();
    let mut notes: Vec<String> = Vec::new();
    let nn = obs.nodes.len();
    // Its colocations: with what is already placed, then what is colocated with it.
    members::colocate_primitive(ctx, ri, &mut scores, &mut steps, &mut notes);
    // A bundle connection whose container was assigned to a remote node runs with that node's
    // connection ("child-remote-with-docker-remote", INFINITY).
    if let Some(rc) = crate::bundles::nested_host_connection(obs, &ctx.desired.assigned, ri) {
        let host = ctx.desired.assigned[rc];
        for (&ni, v) in scores.iter_mut() {
            if Some(ni) != host {
                *v = add_score(*v, -INFINITY);
                record(&mut steps, ni, StepOp::Add(-INFINITY), || {
                    "child-remote-with-docker-remote: its container runs on a remote node".into()
                });
            }
        }
    }
    // A resource to be stopped (target-role, on-fail=stop) is banned from every node once its
    // colocations are applied, before the choice (Pacemaker 2.1.5, `pcmk__primitive_assign`).
    if next_role_stopped(obs, ri) {
        for ni in 0..nn {
            scores.insert(ni, -INFINITY);
            record(&mut steps, ni, StepOp::Set(-INFINITY), || {
                "it is to be stopped (target-role or on-fail=stop)".into()
            });
        }
    }
    // Filters: availability and utilization. With a placement strategy, a node must have room
    // for the unit and every unit still to be placed that a mandatory colocation chain ties to
    // it, when some node has; otherwise for the unit alone, the node with the most free
    // capacity then winning ties.
    let strategy = obs.placement_strategy != "default";
    let own_need = utilization_of(obs, &members);
    let mut need = own_need.clone();
    let mut most_capable: Option<usize> = None;
    if strategy {
        let chained = colocated_need(ctx, u);
        let usable =
            |ni: usize| node_available(obs, ni) && scores.get(&ni).is_some_and(|&s| s >= 0);
        if (0..nn).any(|ni| usable(ni) && fits_need(ctx, &chained, ni)) {
            need = chained;
        } else {
            for ni in (0..nn).filter(|&ni| usable(ni)) {
                if most_capable.is_none_or(|m| capacity_cmp(ctx, ni, m) == std::cmp::Ordering::Less)
                {
                    most_capable = Some(ni);
                }
            }
        }
    }
    let running: Vec<usize> = obs.resources[members[0]].running_on.clone();
    let mut candidates: Vec<(usize, i64)> = Vec::new();
    let mut filtered: Vec<(usize, Option<String>)> = Vec::new();
    for ni in 0..nn {
        let Some(&s) = scores.get(&ni) else {
            if recording {
                filtered.push((ni, filter_reason(obs, &scores, ni)));
            }
            continue;
        };
        if !node_available(obs, ni) || s < 0 {
            if recording {
                let why = match unavailable_reason(obs, ni) {
                    Some(r) => format!("node is {r}"),
                    None => format!("score {} is negative", score_text(s)),
                };
                filtered.push((ni, Some(why)));
            }
            continue;
        }
        if strategy && !fits_need(ctx, &need, ni) {
            if recording {
                filtered.push((ni, Some(capacity_reason(&obs.placement_strategy))));
            }
            continue;
        }
        if recording {
            filtered.push((ni, None));
        }
        candidates.push((ni, s));
    }
    // Pacemaker's current node (`pe__current_node`): the only one, or of several the partial
    // migration's source, else the first clean one it runs on for a resource that needs no
    // fencing (a fencing device), else the first it was found running on (cts-sim --profile full
    // seeds 8, 143, 533: a failed migrate_to left it on both nodes, and at equal scores the
    // restart went to the first node instead of where Pacemaker restarts it).
    let active = obs.current_node(members[0]);
    candidates.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| {
                if obs.placement_strategy == "balanced" {
                    capacity_cmp(ctx, a.0, b.0)
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .then_with(|| {
                if obs.placement_strategy == "minimal" {
                    std::cmp::Ordering::Equal
                } else {
                    ctx.num_resources[a.0]
                        .cmp(&ctx.num_resources[b.0])
                        .then_with(|| (Some(b.0) == active).cmp(&(Some(a.0) == active)))
                }
            })
            // The last tie-break is the names' byte order (`strcmp`), not the natural order the
            // node lists are printed in: node10 comes before node2.
            .then_with(|| obs.nodes[a.0].uname.cmp(&obs.nodes[b.0].uname))
    });
    let unmanaged = unit_blocked_or_unmanaged(obs, u) || no_fencing_device(obs);
    let mut choice = candidates.first().map(|c| c.0);
    // Of the nodes sharing a positive best score, the one it runs on wins, whatever the
    // tie-breaks above said (`assign_best_node`: placement-strategy=minimal, or more resources
    // assigned there already).
    if let (Some(&(_, best)), Some(cur)) = (candidates.first(), active) {
        if best > 0 && candidates.iter().any(|&(ni, s)| ni == cur && s == best) {
            choice = Some(cur);
        }
    }
    // A remote connection in a partial migration prefers the migration's target when it
    // scores as well as the best (see `crate::remote`).
    if let Some(target) = crate::remote::preferred_target(obs, &unit_members(obs, u)) {
        if let Some(&(_, best)) = candidates.first() {
            if candidates.iter().any(|&(ni, s)| ni == target && s >= best) {
                choice = Some(target);
            }
        }
    }
    if let (Some(m), Some(&(_, best))) = (most_capable, candidates.first()) {
        if candidates.iter().any(|&(ni, s)| ni == m && s >= best) {
            if recording && choice != Some(m) {
                notes.push(format!(
                    "no node has room for everything colocated with it: {} has the most free capacity",
                    obs.nodes[m].uname
                ));
            }
            choice = Some(m);
        }
    }
    if unmanaged {
        choice = if running.len() == 1 {
            Some(running[0])
        } else {
            None
        };
        if recording {
            notes.push(if no_fencing_device(obs) {
                "fencing is enabled but nothing can fence: resources stay where they are".into()
            } else {
                "unmanaged (or blocked): it stays where it is".into()
            });
        }
    }
    // It runs on the chosen node unless it is stopped by target-role; unmanaged, it stays
    // where it runs.
    let mut a = choice;
    if target_stopped(obs, ri) {
        a = None;
    }
    if !obs.resources[ri].managed || (unmanaged && a.is_some()) {
        a = if obs.resources[ri].running_on.len() == 1 {
            Some(obs.resources[ri].running_on[0])
        } else {
            None
        };
    }
    ctx.desired.assigned[ri] = a;
    ctx.desired.scores[ri] = scores.clone();
    if let Some(ni) = a {
        ctx.num_resources[ni] += 1;
        for (k2, v) in &obs.resources[ri].utilization {
            *ctx.util_used[ni].entry(k2.clone()).or_insert(0) += *v;
        }
    }
    ctx.done[ri] = true;
    ctx.in_progress[key] = false;
    if let (Some(target), Some(steps)) = (ctx.explain.filter(|_| recording), steps) {
        let assigned = ctx.desired.assigned[target];
        if assigned != choice {
            notes.push(match assigned {
                None if target_stopped(obs, target) => {
                    "it is to be stopped (target-role, orphan or stop-all-resources)".into()
                }
                None => "it cannot run: an earlier group member cannot, or it is banned from the group's node".into(),
                Some(ni) => format!("it stays on {}", obs.nodes[ni].uname),
            });
        }
        ctx.trace = Some(Trace {
            rsc: target,
            group: obs.resources[target].group,
            steps,
            filtered,
            ranking: candidates.iter().map(|c| c.0).collect(),
            notes,
            assigned,
            clone: None,
            clone_steps: Vec::new(),
        });
    }
}

/// Whether nodes `a` and `b` count as the same place for a colocation by `attr` (None or
/// `#uname`: the same node; otherwise both have the attribute, with the same value).
fn same_attribute(obs: &Observed, attr: Option<&str>, a: usize, b: usize) -> bool {
    match attr.filter(|a| *a != "#uname") {
        None => a == b,
        Some(name) => {
            a == b
                || obs.nodes[a]
                    .attrs
                    .get(name)
                    .is_some_and(|v| obs.nodes[b].attrs.get(name) == Some(v))
        }
    }
}

/// Why the placement filters drop node `ni` for a resource with these `scores`, as the
/// explanation says it (None: it stays a candidate): no score there, the node cannot host
/// resources, or the score is negative.
pub fn filter_reason(obs: &Observed, scores: &BTreeMap<usize, i64>, ni: usize) -> Option<String> {
    let Some(&s) = scores.get(&ni) else {
        return Some("no score here (not allowed by any location)".into());
    };
    match unavailable_reason(obs, ni) {
        Some(r) => Some(format!("node is {r}")),
        None if s < 0 => Some(format!("score {} is negative", score_text(s))),
        None => None,
    }
}

/// The explanation's reason for a node without room for the resource's utilization.
pub fn capacity_reason(placement_strategy: &str) -> String {
    format!("utilization: not enough free capacity (placement-strategy={placement_strategy})")
}

/// Why a node cannot host resources at all (None: it can).
pub fn unavailable_reason(obs: &Observed, ni: usize) -> Option<&'static str> {
    let n = &obs.nodes[ni];
    if !n.online {
        Some("offline")
    } else if n.unclean {
        Some("unclean")
    } else if n.standby {
        Some("in standby")
    } else if n.maintenance {
        Some("in maintenance")
    } else if n.shutdown {
        Some("shutting down")
    } else if n.pending {
        Some("pending")
    } else {
        None
    }
}

/// A score as Pacemaker prints it.
pub fn score_text(v: i64) -> String {
    if v >= INFINITY {
        "INFINITY".into()
    } else if v <= -INFINITY {
        "-INFINITY".into()
    } else {
        v.to_string()
    }
}

/// The summed utilization of these resources.
fn utilization_of(obs: &Observed, members: &[usize]) -> BTreeMap<String, i64> {
    let mut need: BTreeMap<String, i64> = BTreeMap::new();
    for &ri in members {
        for (k, v) in &obs.resources[ri].utilization {
            *need.entry(k.clone()).or_insert(0) += v;
        }
    }
    need
}

/// Whether node `ni` has `need` free.
fn fits_need(ctx: &Ctx, need: &BTreeMap<String, i64>, ni: usize) -> bool {
    need.iter().all(|(k, &v)| {
        let cap = ctx.obs.nodes[ni].utilization.get(k).copied().unwrap_or(0);
        let used = ctx.util_used[ni].get(k).copied().unwrap_or(0);
        cap - used >= v
    })
}

/// The utilization of `u` plus that of every unit not placed yet that a chain of mandatory
/// (INFINITY) colocations, either way round, ties to it.
fn colocated_need(ctx: &Ctx, u: Unit) -> BTreeMap<String, i64> {
    let obs = ctx.obs;
    let mut seen = vec![u];
    let mut next = 0;
    while next < seen.len() {
        let cur = seen[next];
        next += 1;
        let ids: Vec<&str> = unit_ids(obs, cur);
        let cols = &ctx.cib.colocations;
        let primaries = positions_of(&ctx.colocations_by_rsc, &ids)
            .into_iter()
            .map(|i| (cols[i].score, cols[i].with_rsc.as_str()));
        // (a clone does not follow dependents that are not clones: Pacemaker cannot tell
        // whether they will be colocated with it)
        let is_clone = |u: Unit| matches!(u, Unit::Group(g) if obs.groups[g].clone.is_some());
        let dependents = positions_of(&ctx.colocations_by_with, &ids)
            .into_iter()
            .map(|i| (cols[i].score, cols[i].rsc.as_str()))
            .filter(|&(_, d)| !is_clone(cur) || unit_of(obs, d).is_some_and(is_clone));
        for (score, other) in primaries.chain(dependents) {
            if score < INFINITY {
                continue;
            }
            if let Some(o) = unit_of(obs, other) {
                if !seen.contains(&o) {
                    seen.push(o);
                }
            }
        }
    }
    let mut members: Vec<usize> = Vec::new();
    for (k, &unit) in seen.iter().enumerate() {
        let key = unit_key(obs, unit);
        if k > 0 && (key == usize::MAX || ctx.done[key]) {
            continue;
        }
        members.extend(unit_members(obs, unit));
    }
    utilization_of(obs, &members)
}

/// The ids a unit's colocations may name: the primitive, or the group and its members.
fn unit_ids(obs: &Observed, u: Unit) -> Vec<&str> {
    match u {
        Unit::Primitive(ri) => vec![obs.resources[ri].id.as_str()],
        Unit::Group(gi) => std::iter::once(obs.groups[gi].id.as_str())
            .chain(
                obs.groups[gi]
                    .members
                    .iter()
                    .map(|&m| obs.resources[m].id.as_str()),
            )
            .collect(),
    }
}

/// A unit's `priority` meta attribute (0 when unset).
fn unit_priority(obs: &Observed, u: Unit) -> i64 {
    let meta = match u {
        Unit::Primitive(ri) => &obs.resources[ri].meta,
        Unit::Group(gi) => &obs.groups[gi].meta,
    };
    meta.get("priority")
        .and_then(|v| parse_score(v))
        .unwrap_or(0)
}

fn capacity_cmp(ctx: &Ctx, a: usize, b: usize) -> std::cmp::Ordering {
    let obs = ctx.obs;
    let mut result = 0i64;
    let keys: std::collections::BTreeSet<&String> = obs.nodes[a]
        .utilization
        .keys()
        .chain(obs.nodes[b].utilization.keys())
        .collect();
    for k in keys {
        let fa = obs.nodes[a].utilization.get(k).copied().unwrap_or(0)
            - ctx.util_used[a].get(k).copied().unwrap_or(0);
        let fb = obs.nodes[b].utilization.get(k).copied().unwrap_or(0)
            - ctx.util_used[b].get(k).copied().unwrap_or(0);
        if fa > fb {
            result -= 1;
        } else if fa < fb {
            result += 1;
        }
    }
    result.cmp(&0)
}

/// The order in which units are placed. Pacemaker 2.1.5 keeps the configuration order, stably
/// sorted by priority (descending); only with a placement strategy other than `default` does it
/// re-sort: priority, then the score on the current node, then scores node by node (nodes in
/// their own sort order), configuration order breaking ties.
fn unit_order(ctx: &mut Ctx) -> Vec<Unit> {
    let obs = ctx.obs;
    let units: Vec<(i64, usize, Unit)> = obs
        .top
        .iter()
        .enumerate()
        .map(|(pos, t)| {
            let (u, prio) = match *t {
                Top::Primitive(ri) => (
                    Unit::Primitive(ri),
                    obs.resources[ri]
                        .meta
                        .get("priority")
                        .and_then(|v| parse_score(v))
                        .unwrap_or(0),
                ),
                Top::Group(gi) => (
                    Unit::Group(gi),
                    obs.groups[gi]
                        .meta
                        .get("priority")
                        .and_then(|v| parse_score(v))
                        .unwrap_or(0),
                ),
            };
            (prio, pos, u)
        })
        .collect();
    let mut idx: Vec<usize> = (0..units.len()).collect();
    if obs.placement_strategy == "default" {
        idx.sort_by(|&a, &b| {
            units[b]
                .0
                .cmp(&units[a].0)
                .then(units[a].1.cmp(&units[b].1))
        });
        return idx.into_iter().map(|i| units[i].2).collect();
    }
    // Nodes in Pacemaker's node order with nothing assigned yet: available first, then (for
    // `balanced`) free capacity, then name.
    let mut nodes: Vec<usize> = (0..obs.nodes.len()).collect();
    nodes.sort_by(|&a, &b| {
        node_available(obs, b)
            .cmp(&node_available(obs, a))
            .then_with(|| {
                if obs.placement_strategy == "balanced" {
                    capacity_cmp(ctx, a, b)
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .then_with(|| obs.nodes[a].uname.cmp(&obs.nodes[b].uname))
    });
    // Each unit's scores (locations, stickiness, failures) and its score where it runs.
    let keys: Vec<(i64, Vec<i64>)> = units
        .iter()
        .map(|(_, _, u)| {
            let first = unit_key(obs, *u);
            if first == usize::MAX {
                return (-INFINITY, vec![-INFINITY; nodes.len()]);
            }
            let mut scores = match *u {
                // A group counts its members' scores, from the last member back through the
                // chain of internal colocations while some node stays usable (Pacemaker 2.1.5).
                // A clone counts its own scores (its locations), not its instances'.
                Unit::Group(gi) if obs.groups[gi].clone.is_some() => clones::own_scores(ctx, gi),
                Unit::Group(gi) => members::sort_scores(ctx, gi),
                Unit::Primitive(_) => {
                    let kept = ctx.desired.trace[first].len();
                    let scores = base_scores(ctx, first);
                    ctx.desired.trace[first].truncate(kept);
                    scores
                }
            };
            // Scores of what this unit is colocated with (positive colocations, scaled).
            let own_id = match *u {
                Unit::Primitive(ri) => obs.resources[ri].id.as_str(),
                Unit::Group(gi) => obs.groups[gi].id.as_str(),
            };
            for c in &ctx.cib.colocations {
                if c.rsc != own_id || c.score <= 0 {
                    continue;
                }
                let Some(with) = unit_of(obs, &c.with_rsc) else {
                    continue;
                };
                let with_first = unit_key(obs, with);
                if with_first == usize::MAX || with_first == first {
                    continue;
                }
                let theirs = match with {
                    Unit::Group(wg) if obs.groups[wg].clone.is_some() => {
                        clones::own_scores(ctx, wg)
                    }
                    _ => {
                        let kept = ctx.desired.trace[with_first].len();
                        let theirs = base_scores(ctx, with_first);
                        ctx.desired.trace[with_first].truncate(kept);
                        theirs
                    }
                };
                for (ni, v) in scores.iter_mut() {
                    // (only an available node counts: `best_node_score_matching_attr`)
                    let other = theirs
                        .get(ni)
                        .copied()
                        .filter(|_| node_available(obs, *ni))
                        .unwrap_or(-INFINITY);
                    let weight = if other <= -INFINITY && c.score >= INFINITY {
                        -INFINITY
                    } else {
                        ((other as f64) * (c.score.min(INFINITY) as f64) / (INFINITY as f64)) as i64
                    };
                    *v = add_score(*v, weight);
                }
            }
            let at = |ni: usize| scores.get(&ni).copied().unwrap_or(-INFINITY);
            // The node it runs on: a group's is the first its members are found active on.
            let current = unit_members(obs, *u)
                .iter()
                .find_map(|&m| obs.resources[m].running_on.first())
                .map(|&ni| at(ni))
                .unwrap_or(-INFINITY);
            (current, nodes.iter().map(|&ni| at(ni)).collect())
        })
        .collect();
    idx.sort_by(|&a, &b| {
        units[b]
            .0
            .cmp(&units[a].0)
            .then(keys[b].0.cmp(&keys[a].0))
            .then_with(|| {
                for (x, y) in keys[a].1.iter().zip(keys[b].1.iter()) {
                    if x != y {
                        return y.cmp(x);
                    }
                }
                std::cmp::Ordering::Equal
            })
            .then(units[a].1.cmp(&units[b].1))
    });
    idx.into_iter().map(|i| units[i].2).collect()
}

/// The CIB with each location naming a clone instance by its history name (its `clone_name`,
/// when that is no resource's or group's id) moved onto the instance's clone, as Pacemaker
/// 2.1.5 resolves a constraint's resource (`pcmk__find_constraint_resource`, renamed
/// instances resolve to their outermost parent). Bundles' replicas are left alone.
fn renamed_locations<'a>(
    cib: std::borrow::Cow<'a, Cib>,
    obs: &Observed,
) -> std::borrow::Cow<'a, Cib> {
    let target = |id: &str| -> Option<String> {
        if obs.rsc_index(id).is_some() || obs.group_index(id).is_some() {
            return None;
        }
        let ri = obs
            .resources
            .iter()
            .position(|r| r.clone_name.as_deref() == Some(id))?;
        let ci = crate::clone_groups::clone_of(obs, ri)?;
        if crate::bundles::bundle_of_child(obs, ci).is_some() {
            return None;
        }
        Some(obs.groups[ci].id.clone())
    };
    let renamed: Vec<(usize, String)> = cib
        .locations
        .iter()
        .enumerate()
        .filter_map(|(i, l)| target(&l.rsc).map(|t| (i, t)))
        .collect();
    if renamed.is_empty() {
        return cib;
    }
    let mut owned = cib.into_owned();
    for (i, t) in renamed {
        owned.locations[i].rsc = t;
    }
    std::borrow::Cow::Owned(owned)
}

/// Places every resource, recording why `explain` (a resource index) goes where it goes.
pub fn place_traced(cib: &Cib, obs: &Observed, explain: Option<usize>) -> (Desired, Option<Trace>) {
    let cib = &*renamed_locations(crate::container::implied_colocations(cib, obs), obs);
    let n = obs.resources.len();
    let discoveries = discoveries(cib, obs);
    let guests = crate::bundles::guest_nodes(obs);
    let mut ctx = Ctx {
        obs,
        cib,
        desired: Desired {
            assigned: vec![None; n],
            scores: vec![BTreeMap::new(); n],
            trace: vec![Vec::new(); n],
            unplaced_reason: vec![None; n],
            order: Vec::new(),
            group_scores: vec![BTreeMap::new(); obs.groups.len()],
            member_scores: vec![BTreeMap::new(); n],
            next_roles: vec![None; n],
            promotion_scores: Vec::new(),
            instance_scores: BTreeMap::new(),
            abandoned_scores: Vec::new(),
            clone_base_scores: BTreeMap::new(),
            no_discovery: no_discovery(obs, &discoveries),
            bundle_own_scores: BTreeMap::new(),
            bundle_assign_calls: Vec::new(),
            exclusive_discovery: discoveries.iter().map(|d| d.0).collect(),
            location_guests: (0..n)
                .map(|ri| {
                    let r = &obs.resources[ri];
                    let rsc = RscData {
                        params: &r.params,
                        meta: &r.meta,
                    };
                    located_guests(cib, obs, &location_ids(obs, ri), Some(rsc), &guests)
                })
                .collect(),
            unpaired: BTreeSet::new(),
            group_location_guests: (0..obs.groups.len())
                .map(|gi| {
                    let mut ids = vec![obs.groups[gi].id.as_str()];
                    ids.extend(
                        crate::clone_groups::parent_clone(obs, gi)
                            .map(|c| obs.groups[c].id.as_str()),
                    );
                    located_guests(cib, obs, &ids, None, &guests)
                })
                .collect(),
            unmanaged: obs
                .resources
                .iter()
                .map(|r| !r.managed || no_fencing_device(obs))
                .collect(),
        },
        num_resources: vec![0; obs.nodes.len()],
        util_used: vec![BTreeMap::new(); obs.nodes.len()],
        done: vec![false; n],
        in_progress: vec![false; n],
        working: vec![None; n],
        role_weights: vec![None; obs.groups.len()],
        discoveries,
        locations_by_rsc: positions_by(&cib.locations, |l| l.rsc.as_str()),
        colocations_by_rsc: positions_by(&cib.colocations, |c| c.rsc.as_str()),
        colocations_by_with: positions_by(&cib.colocations, |c| c.with_rsc.as_str()),
        explain,
        recording: None,
        trace: None,
        instance_recording: None,
    };
    let order = unit_order(&mut ctx);
    // Remote connections are assigned first; the remote nodes they make are online for the
    // rest only when their connection runs somewhere (see `crate::remote`).
    // A bundle's containers, IPs and connections are placed together, after the other
    // connections and before the rest (its inner clone needs its guest nodes; see
    // `crate::bundles`).
    let bundle_part = |u: &Unit| match *u {
        Unit::Primitive(ri) => crate::bundles::is_replica_part(obs, ri),
        Unit::Group(gi) => obs.bundles.iter().any(|b| b.containers == gi),
    };
    let is_connection = |u: &Unit| {
        bundle_part(u)
            || matches!(*u, Unit::Primitive(ri) if obs.resources[ri].remote_node.is_some())
    };
    for u in order.iter().filter(|u| is_connection(u) && !bundle_part(u)) {
        assign_unit(&mut ctx, *u);
    }
    // Each connection assigned makes its remote node online (or shutting down) for what is
    // assigned after it (`remote_connection_assigned`): a bundle's containers may run there.
    let before_bundles = (crate::remote::any(obs) && !obs.bundles.is_empty()).then(|| {
        let mut next = obs.clone();
        for ri in 0..obs.resources.len() {
            if obs.resources[ri].remote_node.is_some() && !crate::bundles::is_replica_part(obs, ri)
            {
                crate::remote::connection_assigned(&mut next, &ctx.desired.assigned, ri);
            }
        }
        next
    });
    let mut ctx = match before_bundles.as_ref() {
        Some(next) => Ctx { obs: next, ..ctx },
        None => ctx,
    };
    // What `pcmk__bundle_allocate` shows for each replica's IP and connection: their own
    // scores (locations, stickiness) before they are assigned.
    for b in &obs.bundles {
        for r in &b.replicas {
            for ri in r.ip.into_iter().chain(r.remote) {
                let recording = ctx.recording.take();
                let notes = ctx.desired.trace[ri].len();
                ctx.desired.member_scores[ri] = base_scores(&mut ctx, ri);
                ctx.desired.trace[ri].truncate(notes);
                ctx.recording = recording;
            }
        }
    }
    // What comes before the first bundle in Pacemaker's order is assigned before it (the
    // bundle is no remote connection: `allocate_resources` reaches it in turn).
    let first_bundle = order.iter().position(bundle_part).unwrap_or(0);
    for u in order[..first_bundle].iter().filter(|u| !is_connection(u)) {
        assign_unit(&mut ctx, *u);
    }
    // So is what comes between two bundles, between them (Pacemaker assigns the top-level
    // resources in turn; the nodes it counts as assigned there break ties for the next bundle).
    // A bundle's inner clone waits for every guest node's state below.
    let last_bundle = order.iter().rposition(bundle_part).unwrap_or(0);
    let bundle_child = |u: &Unit| matches!(*u, Unit::Group(gi) if crate::bundles::bundle_of_child(obs, gi).is_some());
    // What is colocated with a bundle's Promoted role waits too: assigning it assigns the
    // bundle's inner clone and chooses its roles (`members::apply_colocations`).
    let with_promoted_bundle: Vec<bool> = order
        .iter()
        .map(|u| {
            let id = match *u {
                Unit::Primitive(ri) => obs.resources[ri].id.as_str(),
                Unit::Group(gi) => obs.groups[gi].id.as_str(),
            };
            ctx.colocations_by_rsc.get(id).is_some_and(|cs| {
                cs.iter().any(|&c| {
                    let c = &cib.colocations[c];
                    obs.bundles.iter().any(|b| b.id == c.with_rsc)
                        && promotable::role_filter(c.with_rsc_role.as_deref())
                            == Some(Role::Promoted)
                })
            })
        })
        .collect();
    for (pos, u) in order.iter().enumerate() {
        if bundle_part(u)
            || (pos < last_bundle
                && !is_connection(u)
                && !bundle_child(u)
                && !with_promoted_bundle[pos])
        {
            assign_unit(&mut ctx, *u);
        }
    }
    let after_connections = crate::remote::any(obs).then(|| {
        let mut next = obs.clone();
        crate::remote::connections_assigned(&mut next, &ctx.desired.assigned);
        next
    });
    let mut ctx = match after_connections.as_ref() {
        Some(next) => Ctx { obs: next, ..ctx },
        None => ctx,
    };
    for u in order.iter().filter(|u| !is_connection(u)) {
        assign_unit(&mut ctx, *u);
    }
    ctx.desired.bundle_assign_calls = (0..obs.bundles.len())
        .map(|bi| crate::bundles::assign_calls(ctx.cib, ctx.obs, &ctx.desired, bi))
        .collect();
    ctx.desired.order = order
        .iter()
        .map(|u| match *u {
            Unit::Primitive(ri) => Top::Primitive(ri),
            Unit::Group(gi) => Top::Group(gi),
        })
        .collect();
    (ctx.desired, ctx.trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Running on node3 and node2 (node3's state first in the status), equal scores everywhere:
    /// Pacemaker's current node is the first it was found on, so the restart stays on node3
    /// (crm_simulate 2.1.5 on this CIB: "Restart vm ( node3 )"), not on node1, first by name.
    #[test]
    fn a_multiply_active_resource_restarts_on_its_current_node_at_equal_scores() {
        let op = |n: u32| {
            format!(
                r#"<lrm id="{n}"><lrm_resources><lrm_resource id="vm" class="ocf" provider="pacemaker" type="Dummy"><lrm_rsc_op id="vm_last_0" operation_key="vm_start_0" operation="start" transition-key="{n}:1:0:x" transition-magic="0:0;{n}:1:0:x" call-id="2" rc-code="0" op-status="0" interval="0" last-rc-change="900"/></lrm_resource></lrm_resources></lrm>"#
            )
        };
        let state = |n: u32, lrm: String| {
            format!(
                r#"<node_state id="{n}" uname="node{n}" in_ccm="true" crmd="online" join="member" expected="member">{lrm}</node_state>"#
            )
        };
        let xml = format!(
            r#"<cib have-quorum="1"><configuration><crm_config><cluster_property_set id="o"><nvpair id="o1" name="stonith-enabled" value="false"/></cluster_property_set></crm_config><nodes><node id="1" uname="node1"/><node id="2" uname="node2"/><node id="3" uname="node3"/></nodes><resources><primitive id="vm" class="ocf" provider="pacemaker" type="Dummy"><meta_attributes id="vm-meta"><nvpair id="vm-st" name="resource-stickiness" value="100"/></meta_attributes></primitive></resources><constraints/></configuration><status>{}{}{}</status></cib>"#,
            state(3, op(3)),
            state(1, String::new()),
            state(2, op(2))
        );
        let cib = crate::parse_cib(&xml).expect("valid CIB");
        let t = crate::schedule(&cib, 1000);
        let starts: Vec<&str> = t
            .graph
            .actions
            .iter()
            .filter(|a| a.task == "start")
            .filter_map(|a| a.node.and_then(|n| t.observed.nodes.get(n)))
            .map(|n| n.uname.as_str())
            .collect();
        assert_eq!(starts, vec!["node3"]);
    }

    #[test]
    fn scores_saturate() {
        assert_eq!(add_score(INFINITY, -INFINITY), -INFINITY);
        assert_eq!(add_score(900_000, 900_000), INFINITY);
        assert_eq!(add_score(5, -3), 2);
    }
}
