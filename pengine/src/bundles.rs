//! Pacemaker bundles as Pacemaker 2.1.5 has them (`lib/pengine/bundle.c`,
//! `lib/pacemaker/pcmk_sched_bundle.c`): a `cib::bundles::BundleDef` becomes, in `observed`,
//! the replicas' containers as the members of a globally unique clone named after the bundle
//! (so the bundle's start/running/stop/stopped pseudo actions, its locations and colocations
//! and the containers' distribution are a clone's: `pcmk__bundle_allocate` distributes the
//! containers as `distribute_children` does), each replica's IP and connection as top-level
//! primitives hidden from the status (the connection's `container` makes the replica's guest
//! node), and the inner primitive as a clone (`<bundle>-clone` or `<bundle>-master`) whose
//! instance N may only run on guest node N. `Bundle` keeps which resource is which, for the
//! status block ("Container bundle set: ...", one line per replica) and the orderings Pacemaker
//! adds between the bundle and its inner clone.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::cib::bundles::BundleDef;
use crate::cib::{Cib, Colocation, INFINITY, Order, is_true};
use crate::clones::CloneSpec;
use crate::observed::{Group, Observed, Resource, Top, make_resource, merge_sets};

/// One replica: positions in `Observed::resources`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replica {
    pub container: usize,
    pub ip: Option<usize>,
    pub remote: Option<usize>,
    /// The inner clone's instance N.
    pub child: Option<usize>,
    pub ipaddr: Option<String>,
}

/// A bundle in `Observed`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bundle {
    pub id: String,
    pub image: String,
    /// `replicas-per-host` above 1.
    pub unique: bool,
    /// The clone (in `Observed::groups`) whose members are the containers; named as the bundle.
    pub containers: usize,
    /// The inner primitive's clone, if there is one.
    pub child: Option<usize>,
    pub replicas: Vec<Replica>,
}

/// The name the containers' clone spec gives its (never used) cloned primitive.
fn no_child(id: &str) -> String {
    format!("{id}#containers")
}

/// Adds the bundle `b` to `obs` (see the module documentation).
pub fn add_bundle(obs: &mut Observed, b: &BundleDef, cib: &Cib, now: i64) {
    let mut bmeta = BTreeMap::new();
    merge_sets(&mut bmeta, &b.meta, now, None);
    let gi = obs.groups.len();
    let mut members = Vec::new();
    let mut replicas = Vec::new();
    for r in &b.replicas {
        let mut c = make_resource(&r.container, cib, Some(&bmeta), now);
        c.group = Some(gi);
        members.push(obs.resources.len());
        replicas.push(Replica {
            container: obs.resources.len(),
            ipaddr: r.ipaddr.clone(),
            ..Default::default()
        });
        obs.resources.push(c);
    }
    let mut gmeta = bmeta.clone();
    merge_sets(&mut gmeta, &cib.rsc_defaults, now, None);
    obs.groups.push(Group {
        id: b.id.clone(),
        members,
        meta: gmeta,
        clone: Some(CloneSpec {
            child: no_child(&b.id),
            max: b.replicas.len(),
            node_max: b.per_host,
            unique: true,
            ordered: false,
            ..Default::default()
        }),
    });
    obs.top.push(Top::Group(gi));
    for (n, r) in b.replicas.iter().enumerate() {
        if let Some(ip) = &r.ip {
            replicas[n].ip = Some(obs.resources.len());
            obs.top.push(Top::Primitive(obs.resources.len()));
            obs.resources
                .push(make_resource(ip, cib, Some(&bmeta), now));
        }
    }
    for (n, r) in b.replicas.iter().enumerate() {
        if let Some(remote) = &r.remote {
            replicas[n].remote = Some(obs.resources.len());
            obs.top.push(Top::Primitive(obs.resources.len()));
            obs.resources
                .push(make_resource(remote, cib, Some(&bmeta), now));
        }
    }
    let mut child = None;
    if let Some(c) = &b.child {
        crate::clones::add_clone(obs, c, cib, now);
        let ci = obs.groups.len() - 1;
        child = Some(ci);
        let instances = obs.groups[ci].members.clone();
        for (n, ri) in instances.into_iter().enumerate() {
            if let Some(rep) = replicas.get_mut(n) {
                rep.child = Some(ri);
                if let Some(a) = &rep.ipaddr {
                    obs.resources[ri]
                        .meta
                        .entry("external-ip".into())
                        .or_insert_with(|| a.clone());
                }
            }
        }
    }
    // Each IP starts before its container and stops after it (`pcmk__bundle_internal_constraints`).
    for r in &replicas {
        if let Some(ip) = r.ip {
            obs.orders.push(Order {
                id: format!("{}{IP_ORDER_SUFFIX}", b.id),
                first: obs.resources[ip].id.clone(),
                then: obs.resources[r.container].id.clone(),
                first_action: "start".into(),
                then_action: "start".into(),
                kind: "mandatory".into(),
                symmetrical: Some(true),
                one_or_more: Default::default(),
            });
        }
    }
    // The inner clone notifies when its primitive asks to.
    if let Some(ci) = child {
        let notify = obs.groups[ci].members.first().is_some_and(|&ri| {
            obs.resources[ri]
                .meta
                .get("notify")
                .is_some_and(|v| is_true(v))
        });
        if let Some(spec) = obs.groups[ci].clone.as_mut() {
            spec.notify |= notify;
        }
    }
    obs.bundle_nodes_pending = obs
        .bundle_nodes_pending
        .saturating_sub(created_nodes(b, cib));
    obs.bundles.push(Bundle {
        id: b.id.clone(),
        image: b.image.clone(),
        unique: b.per_host > 1,
        containers: gi,
        child,
        replicas,
    });
}

/// How many guest nodes unpacking bundle `b` creates: one per replica with a connection, but
/// for a node the node section declares (it exists before the resources are unpacked).
pub fn created_nodes(b: &BundleDef, cib: &Cib) -> usize {
    b.replicas
        .iter()
        .filter_map(|r| r.remote.as_ref())
        .filter(|p| !cib.nodes.iter().any(|n| n.uname == p.id))
        .count()
}

/// The bundle a top-level entry belongs to, and whether it is the bundle's first entry (the
/// containers' clone, where the status prints the bundle).
pub fn bundle_of(obs: &Observed, t: Top) -> Option<(usize, bool)> {
    obs.bundles.iter().enumerate().find_map(|(bi, b)| match t {
        Top::Group(gi) if gi == b.containers => Some((bi, true)),
        Top::Group(gi) if Some(gi) == b.child => Some((bi, false)),
        Top::Primitive(ri)
            if b.replicas
                .iter()
                .any(|r| r.ip == Some(ri) || r.remote == Some(ri)) =>
        {
            Some((bi, false))
        }
        _ => None,
    })
}

/// The guest nodes of bundle replicas (their names: the connections' ids).
pub fn is_bundle_node(obs: &Observed, ni: usize) -> bool {
    let name = &obs.nodes[ni].uname;
    obs.bundles.iter().any(|b| {
        b.replicas
            .iter()
            .any(|r| r.remote.is_some_and(|ri| &obs.resources[ri].id == name))
    })
}

/// The bundle's status block as `pe__bundle_text` prints it without implicit resources: a
/// header, then per replica the inner resource (or the container) named by the connection (or
/// the container) and the replica's address, on the container's node.
pub fn render(obs: &Observed, bi: usize, show_pending: bool, out: &mut String) {
    let b = &obs.bundles[bi];
    let g = &obs.groups[b.containers];
    let flag = |k: &str| g.meta.get(k).is_some_and(|v| is_true(v));
    let managed = g.meta.get("is-managed").is_none_or(|v| is_true(v))
        && !flag("maintenance")
        && !obs.maintenance_mode;
    let _ = writeln!(
        out,
        "    * Container bundle{}: {} [{}]{}{}:",
        if b.replicas.len() > 1 { " set" } else { "" },
        b.id,
        b.image,
        if b.unique { " (unique)" } else { "" },
        if managed { "" } else { " (unmanaged)" }
    );
    for (n, r) in b.replicas.iter().enumerate() {
        let mut rsc = replica_shown(obs, bi, n);
        if let Some(a) = &r.ipaddr {
            let _ = write!(rsc.id, " ({a})");
        }
        let _ = writeln!(
            out,
            "      * {}",
            crate::status::primitive_line_with(obs, &rsc, show_pending)
        );
    }
}

/// What a replica's status line shows: the inner resource (or the container) under the name
/// of the connection (or the container), on the container's node; the line adds the replica's
/// address after that name.
pub fn replica_shown(obs: &Observed, bi: usize, n: usize) -> Resource {
    let r = &obs.bundles[bi].replicas[n];
    let mut rsc = obs.resources[r.child.unwrap_or(r.container)].clone();
    rsc.id = obs.resources[r.remote.unwrap_or(r.container)].id.clone();
    rsc.running_on = obs.resources[r.container]
        .running_on
        .first()
        .copied()
        .into_iter()
        .collect();
    rsc
}

/// The bundle replica a resource belongs to: (bundle, replica).
pub fn replica_of(obs: &Observed, ri: usize) -> Option<(usize, usize)> {
    obs.bundles.iter().enumerate().find_map(|(bi, b)| {
        b.replicas
            .iter()
            .position(|r| {
                r.container == ri || r.ip == Some(ri) || r.remote == Some(ri) || r.child == Some(ri)
            })
            .map(|n| (bi, n))
    })
}

/// Whether the resource belongs to a bundle (Pacemaker's `pe_rsc_is_bundled`): a replica's
/// container, IP address or connection, or an instance of its inner clone.
pub fn is_bundled(obs: &Observed, ri: usize) -> bool {
    replica_of(obs, ri).is_some()
        || obs.resources[ri]
            .group
            .is_some_and(|g| bundle_of_child(obs, g).is_some())
}

/// Whether bundle guest node `ni` is among the allowed nodes of resource `ri`; None when `ni`
/// is no bundle's guest node (see `guest_node_copy`).
pub fn guest_node_allowed(obs: &Observed, ri: usize, ni: usize) -> Option<bool> {
    bundle_node_of(obs, ni)?;
    Some(guest_node_copy(obs, ri, ni).is_some())
}

/// The bundle replica whose guest node `ni` is: (bundle, replica).
pub fn bundle_node_of(obs: &Observed, ni: usize) -> Option<(usize, usize)> {
    (0..obs.bundles.len()).find_map(|bi| {
        (0..obs.bundles[bi].replicas.len())
            .find(|&n| replica_node(obs, bi, n) == Some(ni))
            .map(|n| (bi, n))
    })
}

/// Where something is made in Pacemaker's unpack sequence: the top-level configuration entry
/// being unpacked (`Observed::unpack_step`), then, within a bundle (`pe__unpack_bundle`), the
/// inner clone first, then replica by replica its container, IP, guest node and connection
/// (`create_replica_resources`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct UnpackPos {
    step: usize,
    part: usize,
}

/// The part of replica `n` of a bundle: 0 is the inner clone's.
fn replica_part(n: usize, what: usize) -> usize {
    1 + 4 * n + what
}
const CONTAINER_PART: usize = 0;
const IP_PART: usize = 1;
const NODE_PART: usize = 2;
const CONNECTION_PART: usize = 3;

/// When resource `ri` was unpacked (a resource made later, from the status, comes last).
fn unpack_pos(obs: &Observed, ri: usize) -> UnpackPos {
    let step = obs.unpack_step.get(ri).copied().unwrap_or(usize::MAX);
    let part = match replica_of(obs, ri) {
        Some((bi, n)) => {
            let r = &obs.bundles[bi].replicas[n];
            if r.container == ri {
                replica_part(n, CONTAINER_PART)
            } else if r.ip == Some(ri) {
                replica_part(n, IP_PART)
            } else if r.remote == Some(ri) {
                replica_part(n, CONNECTION_PART)
            } else {
                0
            }
        }
        None => 0,
    };
    UnpackPos { step, part }
}

/// When bundle `bi` was unpacked (its inner clone's position).
fn bundle_pos(obs: &Observed, bi: usize) -> UnpackPos {
    let first = obs.bundles[bi].replicas.first().map(|r| r.container);
    UnpackPos {
        step: first
            .and_then(|c| obs.unpack_step.get(c).copied())
            .unwrap_or(usize::MAX),
        part: 0,
    }
}

/// The copy of bundle guest node `ni` that the allowed nodes of what was unpacked at `pos`
/// hold once the configuration is unpacked (None: no copy). Pacemaker 2.1.5 makes a bundle's
/// guest node while it unpacks the replica (`create_remote_resource`), or finds it declared in
/// the node section (made before any resource, weighing its `score`), then sets its weight to
/// -INFINITY and its discovery to "never". A resource copies the nodes known when it is
/// unpacked (the symmetric default, which skips discovery "never"; in an asymmetric cluster a
/// guest node's connection copies them all, `remote_connection_default`), and
/// `disallow_node` bans the node in the resources unpacked before the bundle.
/// `guest_connection`: what was unpacked is a guest node's connection (its `container` set).
fn copy_at(obs: &Observed, pos: UnpackPos, guest_connection: bool, ni: usize) -> Option<i64> {
    let (bi, k) = bundle_node_of(obs, ni)?;
    let at = bundle_pos(obs, bi);
    let made = UnpackPos {
        step: at.step,
        part: replica_part(k, NODE_PART),
    };
    let declared = obs.nodes[ni].remote.as_ref().filter(|rn| rn.declared);
    let exists = declared.is_some() || made < pos;
    let weight = match declared {
        Some(rn) if pos < made => rn.declared_score,
        _ => -INFINITY,
    };
    let copied = if obs.symmetric {
        exists && pos < made
    } else {
        exists && guest_connection
    };
    if !copied {
        return None;
    }
    Some(if pos.step < at.step {
        -INFINITY
    } else {
        weight
    })
}

/// The copy of bundle guest node `ni` in resource `ri`'s allowed nodes once the configuration
/// is unpacked (see `copy_at`); None when it holds none or `ni` is no bundle's guest node. A
/// bundle's inner instance holds its own replica's node only (500); a bundle's connection
/// bans every remote or guest node it holds (`create_remote_resource`).
pub fn guest_node_copy(obs: &Observed, ri: usize, ni: usize) -> Option<i64> {
    let (bi, k) = bundle_node_of(obs, ni)?;
    if let Some((own, n)) = replica_of(obs, ri) {
        let r = &obs.bundles[own].replicas[n];
        if r.child == Some(ri) {
            return (own == bi && n == k).then_some(500);
        }
        if r.remote == Some(ri) {
            return copy_at(obs, unpack_pos(obs, ri), true, ni).map(|_| -INFINITY);
        }
    }
    let guest_connection = crate::guest::is_connection(&obs.resources[ri]);
    copy_at(obs, unpack_pos(obs, ri), guest_connection, ni)
}

/// The copy of bundle guest node `ni` in the allowed nodes of bundle `bi`'s inner clone: its
/// own replicas' nodes -INFINITY (`create_remote_resource`), another bundle's as `copy_at`
/// has them (the clone is unpacked first, and `disallow_node` reaches it through the bundle).
pub fn inner_clone_copy(obs: &Observed, bi: usize, ni: usize) -> Option<i64> {
    let (own, _) = bundle_node_of(obs, ni)?;
    if own == bi {
        return Some(-INFINITY);
    }
    copy_at(obs, bundle_pos(obs, bi), false, ni)
}

/// The copy of bundle guest node `ni` in bundle `bi`'s own allowed nodes: the bundle takes
/// the symmetric default once its parts are made (`pe__unpack_resource` after
/// `pe__unpack_bundle`), so only another bundle's node can be there (see `copy_at`).
pub fn bundle_copy(obs: &Observed, bi: usize, ni: usize) -> Option<i64> {
    let pos = UnpackPos {
        part: usize::MAX,
        ..bundle_pos(obs, bi)
    };
    copy_at(obs, pos, false, ni)
}

/// The bundle guest nodes among resource `ri`'s allowed nodes once the configuration is
/// unpacked, with their copies' weights (see `guest_node_copy`); an inner instance's own
/// replica's node is left out (it is where the instance runs).
pub fn guest_node_copies(obs: &Observed, ri: usize) -> BTreeMap<usize, i64> {
    let inner =
        replica_of(obs, ri).is_some_and(|(bi, n)| obs.bundles[bi].replicas[n].child == Some(ri));
    if inner {
        return BTreeMap::new();
    }
    guest_nodes(obs)
        .into_iter()
        .filter_map(|ni| Some((ni, guest_node_copy(obs, ri, ni)?)))
        .collect()
}

/// Probes `pcmk__bundle_create_probe` does not create: nothing on a bundle's guest node but
/// that replica's inner instance (discovery "never" there), the inner instance nowhere else
/// (discovery "exclusive"), and no connection probe while its container will not run (the
/// probe waits for the container's start).
pub fn never_probed(obs: &Observed, assigned: &[Option<usize>], ri: usize, ni: usize) -> bool {
    if obs.bundles.is_empty() {
        return false;
    }
    let replica = replica_of(obs, ri).map(|(bi, n)| &obs.bundles[bi].replicas[n]);
    let node_replica = obs.bundles.iter().find_map(|b| {
        b.replicas.iter().find(|r| {
            r.remote
                .is_some_and(|c| obs.resources[c].id == obs.nodes[ni].uname)
        })
    });
    if let Some(nr) = node_replica {
        return nr.child != Some(ri);
    }
    let Some(rep) = replica else {
        return false;
    };
    if rep.child == Some(ri) {
        return true;
    }
    if rep.remote == Some(ri) {
        return assigned[rep.container].is_none() && !obs.resources[rep.container].managed;
    }
    false
}

/// Whether `ri` is a bundle connection whose probe cannot run: it waits for the container's
/// start, and the container is not placed (while the container is active somewhere, Pacemaker
/// ignores that ordering: `pe_order_probe` with a first that is stopping).
pub fn probe_waits_unrunnable(obs: &Observed, assigned: &[Option<usize>], ri: usize) -> bool {
    replica_of(obs, ri)
        .map(|(bi, n)| &obs.bundles[bi].replicas[n])
        .is_some_and(|rep| {
            rep.remote == Some(ri)
                && assigned[rep.container].is_none()
                && obs.resources[rep.container].running_on.is_empty()
        })
}

/// Each replica's IP colocated with its container (`ip-with-docker`, INFINITY).
pub fn ip_colocations(obs: &Observed) -> impl Iterator<Item = Colocation> + '_ {
    obs.bundles.iter().flat_map(move |b| {
        b.replicas.iter().filter_map(move |r| {
            r.ip.map(|ip| Colocation {
                id: "ip-with-docker".into(),
                rsc: obs.resources[ip].id.clone(),
                with_rsc: obs.resources[r.container].id.clone(),
                score: INFINITY,
                ..Default::default()
            })
        })
    })
}

/// The bundle whose inner clone is group `gi`.
pub fn bundle_of_child(obs: &Observed, gi: usize) -> Option<usize> {
    obs.bundles.iter().position(|b| b.child == Some(gi))
}

/// Every bundle's guest nodes.
pub fn guest_nodes(obs: &Observed) -> std::collections::BTreeSet<usize> {
    (0..obs.bundles.len())
        .flat_map(|bi| {
            (0..obs.bundles[bi].replicas.len()).filter_map(move |n| replica_node(obs, bi, n))
        })
        .collect()
}

/// Whether `ri` is a bundle's container, IP or connection (placed with the bundle, before the
/// inner clone: `pcmk__bundle_allocate`).
pub fn is_replica_part(obs: &Observed, ri: usize) -> bool {
    replica_of(obs, ri)
        .map(|(bi, n)| &obs.bundles[bi].replicas[n])
        .is_some_and(|r| r.child != Some(ri))
}

/// The guest node of replica `n` of bundle `bi` (its connection's node).
pub fn replica_node(obs: &Observed, bi: usize, n: usize) -> Option<usize> {
    let ri = obs.bundles[bi].replicas.get(n)?.remote?;
    obs.resources[ri].remote_node
}

/// The orderings `pcmk__bundle_internal_constraints` and `pcmk__bundle_create_probe` add
/// between a bundle and its inner clone: the bundle's start before the clone's, the clone's
/// running before the bundle's, the same for stops, the bundle's stop before each instance's;
/// a container's probe before the other containers' starts on that node (one replica per
/// host); a connection's probes after its container's start.
pub fn order_actions(
    obs: &Observed,
    plan: &mut crate::actions::Plan,
    probe_ids: &[(usize, usize)],
) {
    use crate::actions::{Kind, Rel};
    for b in &obs.bundles {
        let own =
            |plan: &crate::actions::Plan, kind: &Kind| plan.find_group_action(b.containers, kind);
        if let Some(ci) = b.child {
            let inner = |plan: &crate::actions::Plan, kind: &Kind| plan.find_group_action(ci, kind);
            // The bundle's own start, running, stop and stopped are required with the inner
            // clone's (`pe_order_implies_first_printed`, `pe_order_implies_then_printed`).
            for kind in [
                Kind::GroupStart,
                Kind::GroupRunning,
                Kind::GroupStop,
                Kind::GroupStopped,
            ] {
                // (the bundle's start is printed only when, as Pacemaker meets the orderings,
                // a container start is required or the inner clone's start already is: an
                // instance start that cannot run only makes the clone's start required after
                // the bundle's ordering with it was met: no-promote-on-unrunnable-guest)
                if kind == Kind::GroupStart && !bundle_start_printed(obs, plan, b) {
                    continue;
                }
                // (the inner clone's running makes the bundle's printed only when it can run:
                // `pe_order_implies_then_printed` needs a runnable first)
                if kind == Kind::GroupRunning
                    && inner(plan, &kind).is_some_and(|i| !plan.actions[i].runnable)
                {
                    continue;
                }
                if let (Some(i), None) = (inner(plan, &kind), own(plan, &kind)) {
                    let mut a = crate::actions::act(kind, None, None);
                    a.group = Some(b.containers);
                    a.pseudo = true;
                    a.runnable = plan.actions[i].runnable;
                    a.dot_only = plan.actions[i].dot_only;
                    plan.add(a);
                }
            }
            // Pacemaker creates the four together (start, running, stop, stopped), whichever
            // of them the plan made first (a user ordering's then).
            let own_ids: Vec<usize> = [
                Kind::GroupStart,
                Kind::GroupRunning,
                Kind::GroupStop,
                Kind::GroupStopped,
            ]
            .iter()
            .filter_map(|k| own(plan, k))
            .collect();
            if own_ids.windows(2).any(|w| w[0] > w[1]) {
                let base = own_ids.iter().copied().min().unwrap_or_default();
                for (k, &id) in own_ids.iter().enumerate() {
                    plan.actions[id].created_at = Some(base + k);
                }
            }
            // A promotable inner clone: the bundle starts after it stopped
            // (`pcmk__promotable_restart_ordering`).
            let promotable = obs.groups[ci]
                .clone
                .as_ref()
                .is_some_and(|c| c.promotable.is_some());
            if let (true, Some(gd), Some(gs)) = (
                promotable,
                own(plan, &Kind::GroupStopped),
                own(plan, &Kind::GroupStart),
            ) {
                plan.edge_rel(gd, gs, Rel::Optional);
            }
            let pairs = [
                (
                    own(plan, &Kind::GroupStart),
                    inner(plan, &Kind::GroupStart),
                    Rel::Start,
                ),
                (
                    inner(plan, &Kind::GroupRunning),
                    own(plan, &Kind::GroupRunning),
                    Rel::Start,
                ),
                (
                    own(plan, &Kind::GroupStop),
                    inner(plan, &Kind::GroupStop),
                    Rel::GroupStop,
                ),
                (
                    inner(plan, &Kind::GroupStopped),
                    own(plan, &Kind::GroupStopped),
                    Rel::GroupStop,
                ),
            ];
            for (f, t, rel) in pairs {
                if let (Some(f), Some(t)) = (f, t) {
                    plan.edge_rel(f, t, rel);
                }
            }
            if let Some(gs) = own(plan, &Kind::GroupStop) {
                for r in &b.replicas {
                    for st in r.child.map(|c| plan.stops(c)).unwrap_or_default() {
                        plan.edge_rel(gs, st, Rel::GroupStop);
                    }
                }
            }
        }
        // Container probes before the container's start and the inner clone's start.
        let inner_start = b
            .child
            .and_then(|ci| plan.find_group_action(ci, &Kind::GroupStart));
        for r in &b.replicas {
            for &(_, pid) in probe_ids.iter().filter(|(pr, _)| *pr == r.container) {
                for start in plan.starts(r.container) {
                    plan.edge_rel(pid, start, Rel::Plain);
                }
                if let Some(s) = inner_start {
                    plan.edge_rel(pid, s, Rel::Plain);
                }
            }
        }
        // One replica per host: another replica's container starts on a node only after
        // this container's probe there (`pcmk__bundle_create_probe`, an optional ordering).
        if !b.unique {
            for r in &b.replicas {
                for &(_, pid) in probe_ids.iter().filter(|(pr, _)| *pr == r.container) {
                    let node = plan.actions[pid].node;
                    for o in b.replicas.iter().filter(|o| o.container != r.container) {
                        for start in plan.starts(o.container) {
                            if plan.actions[start].node == node {
                                plan.edge_rel(pid, start, Rel::Optional);
                            }
                        }
                    }
                }
            }
        }
        for r in &b.replicas {
            let Some(remote) = r.remote else { continue };
            for start in plan.starts(r.container) {
                for &(pr, pid) in probe_ids {
                    if pr == remote {
                        plan.edge_rel(start, pid, Rel::Plain);
                    }
                }
            }
        }
    }
}

/// Whether a bundle's start pseudo action is required by its containers' or inner instances'
/// starts: a container start, or an instance start that can run or that Pacemaker creates
/// required (the instance starts or moves there, or recovers from a failure), not one that
/// only the restart of its guest's connection requires.
/// Pacemaker also meets that ordering again when the bundle's start is the then of an ordering
/// whose first is another collective resource's action (remapped, as to its running: the
/// bundle's start changed, so its afters are processed again; bundle-order-stop-clone).
/// That counts only when the remap happens where `pcmk__apply_orderings` reaches the bundle's
/// start itself (newest-created actions first, after its instances'), so only for a first
/// configured before the bundle: a first configured after it is processed earlier, and its
/// start's change reprocesses (and remaps) the bundle's start before its instances' starts are
/// required (bundle-order-partial-stop).
fn bundle_start_printed(obs: &Observed, plan: &crate::actions::Plan, b: &Bundle) -> bool {
    // A collective's position in configuration order (a bundle by its containers' clone).
    let position = |id: &str| {
        obs.bundles
            .iter()
            .find(|o| o.id == id)
            .map(|o| o.containers)
            .or_else(|| obs.groups.iter().position(|g| g.id == id))
    };
    let remapped_first = obs.orders.iter().any(|o| {
        o.then == b.id
            && o.then_action == "start"
            && o.first != b.id
            && position(&o.first).is_some_and(|p| p < b.containers)
    });
    remapped_first
        || b.replicas.iter().any(|r| {
            !plan.starts(r.container).is_empty()
                || r.child.is_some_and(|c| {
                    let inst = &obs.resources[c];
                    // (a failed instance's recovery start is required when created, even one
                    // only drawn; not a promotable instance's, which Pacemaker makes required
                    // only after it met the bundle's ordering: bundle-order-fencing)
                    let recovered = inst.failed && !crate::promotable::is_instance(obs, c);
                    let drawn = if recovered {
                        plan.drawn_starts(c)
                    } else {
                        Vec::new()
                    };
                    plan.starts(c).into_iter().chain(drawn).any(|s| {
                        let a = &plan.actions[s];
                        !a.optional
                            && (a.runnable
                                || inst.failed
                                || !a.node.is_some_and(|n| inst.running_on.contains(&n)))
                    })
                })
        })
}

/// Whether node `ni` is unknown to clone `gi` (not among the nodes it is told are available):
/// for a bundle's inner clone, a guest node of another bundle; for another clone, a guest node
/// of a bundle unpacked after it (Pacemaker makes a bundle's guest nodes while unpacking it).
pub fn node_unknown_to(obs: &Observed, gi: usize, ni: usize) -> bool {
    let own = bundle_of_child(obs, gi);
    (0..obs.bundles.len())
        .filter(|&bi| match own {
            Some(own) => bi != own,
            None => obs.bundles[bi].containers > gi,
        })
        .any(|bi| (0..obs.bundles[bi].replicas.len()).any(|n| replica_node(obs, bi, n) == Some(ni)))
}

/// Whether `ri` is a bundle replica's connection: Pacemaker gives it `pe_rsc_allow_remote_remotes`,
/// so its container may run on a Pacemaker Remote node, it is colocated with its container at
/// 10000 only (`crate::container`), and it does not pull an active, healthy container.
pub fn is_replica_connection(obs: &Observed, ri: usize) -> bool {
    replica_of(obs, ri).is_some_and(|(bi, n)| obs.bundles[bi].replicas[n].remote == Some(ri))
}

/// Whether `ri` is a bundle replica's container.
pub fn is_replica_container(obs: &Observed, ri: usize) -> bool {
    replica_of(obs, ri).is_some_and(|(bi, n)| obs.bundles[bi].replicas[n].container == ri)
}

/// For a bundle connection whose container is assigned to a Pacemaker Remote (or guest) node:
/// that node's connection, which the bundle connection must run with (Pacemaker's
/// "child-remote-with-docker-remote" colocation, INFINITY: pacemaker-remoted takes a single
/// connection).
pub fn nested_host_connection(
    obs: &Observed,
    assigned: &[Option<usize>],
    ri: usize,
) -> Option<usize> {
    let (bi, n) = replica_of(obs, ri)?;
    let rep = &obs.bundles[bi].replicas[n];
    if rep.remote != Some(ri) {
        return None;
    }
    let host = assigned.get(rep.container).copied().flatten()?;
    obs.nodes[host].remote.as_ref()?.connection
}

/// The host a bundle connection without an IP address reaches its container through
/// (REMOTE_CONTAINER_HACK, `pe__add_bundle_remote_name`): where its container is assigned, else
/// where it runs now. None for anything else.
pub fn remote_addr_host(obs: &Observed, ri: usize) -> Option<usize> {
    let (bi, n) = replica_of(obs, ri)?;
    let rep = &obs.bundles[bi].replicas[n];
    if rep.remote != Some(ri) || rep.ipaddr.is_some() {
        return None;
    }
    let node = obs.resources[ri].remote_node?;
    obs.nodes[node]
        .remote
        .as_ref()
        .and_then(|rn| rn.container_host)
        .or_else(|| obs.resources[rep.container].running_on.first().copied())
}

/// Pacemaker's deferred configuration check of a bundle connection reaching its container's
/// host (`pe__add_param_check` while the REMOTE_CONTAINER_HACK is used): once placed, each node
/// the connection is active on compares its history with `addr` set to that host.
pub fn check_connection_definitions(cib: &Cib, obs: &mut Observed) {
    for ri in 0..obs.resources.len() {
        if !is_replica_connection(obs, ri) || !obs.resources[ri].addr_from_container() {
            continue;
        }
        let host = remote_addr_host(obs, ri);
        // A last failure of a start or monitor whose parameters, with `addr` set to the host
        // (left "#uname" when there is none), differ from the recorded ones has its fail count
        // cleared ("resource parameters have changed", `check_params`).
        for (ni, op) in std::mem::take(&mut obs.resources[ri].deferred_failure_checks) {
            let r = &obs.resources[ri];
            let attrs = &obs.nodes[ni].attrs;
            let mut params = r.op_params(&op.operation, op.interval_ms, attrs, obs.now);
            let addr = host.map_or("#uname", |h| obs.nodes[h].uname.as_str());
            params.params.insert("addr".into(), addr.to_string());
            let check = crate::digest::check(&params, &op.element, &r.feature_set, false);
            if matches!(
                check,
                crate::digest::DigestCheck::Restart | crate::digest::DigestCheck::All
            ) && r.managed
                && !r.clear_failcount_on.contains(&ni)
            {
                obs.resources[ri].clear_failcount_on.push(ni);
            }
        }
        let Some(host) = host else {
            continue;
        };
        let addr = obs.nodes[host].uname.clone();
        let histories: Vec<(usize, Vec<crate::cib::RscOp>)> =
            crate::observed::lrm_histories(cib, &obs.nodes)
                .filter(|(ni, lr)| {
                    lr.id == obs.resources[ri].id && obs.resources[ri].running_on.contains(ni)
                })
                .map(|(ni, lr)| (ni, lr.ops.clone()))
                .collect();
        for (ni, ops) in histories {
            let now = obs.now;
            crate::observed::definition_changed(
                &mut obs.resources[ri],
                ni,
                &ops,
                &obs.nodes,
                now,
                Some(&addr),
            );
        }
    }
}

/// How many times Pacemaker 2.1.5 runs `pcmk__bundle_allocate` for bundle `bi`, which, unlike
/// the other assignment functions, does not stop when the bundle is already assigned: once in
/// the resources' loop, and again each time a dependent in a colocation with the bundle is
/// assigned (its primaries are assigned first, `apply_this_with`): once for a primitive or a
/// group (its first member), for a clone once and once per instance, for another bundle once
/// per container, an instance or container taking the colocation when not every node gets one,
/// else only when it is mandatory or negative (`append_parent_colocation`).
pub fn assign_calls(
    cib: &Cib,
    obs: &Observed,
    desired: &crate::placement::Desired,
    bi: usize,
) -> usize {
    let b = &obs.bundles[bi];
    let passed_on = |c: &Colocation, gi: usize, max: usize| {
        let available = desired.group_scores[gi]
            .keys()
            .filter(|&&ni| crate::placement::node_available(obs, ni))
            .count();
        max < available || c.score < 0 || c.score >= INFINITY
    };
    let mut calls = 1;
    for c in cib.colocations.iter().filter(|c| c.with_rsc == b.id) {
        if c.rsc == b.id {
            continue;
        }
        if let Some(dependent) = obs.bundles.iter().find(|d| d.id == c.rsc) {
            if passed_on(c, dependent.containers, dependent.replicas.len()) {
                calls += dependent.replicas.len();
            }
        } else if let Some(gi) = obs.group_index(&c.rsc) {
            calls += 1;
            if let Some(spec) = obs.groups[gi].clone.as_ref() {
                let instances = match spec.instances.len() {
                    0 => obs.groups[gi].members.len(),
                    n => n,
                };
                if passed_on(c, gi, spec.max) {
                    calls += instances.min(spec.max);
                }
            }
        } else if obs.rsc_index(&c.rsc).is_some() {
            calls += 1;
        }
    }
    calls
}

/// The id suffix of the implied "IP start then container start" ordering of a replica.
const IP_ORDER_SUFFIX: &str = "-ip-before-container";

/// Whether an ordering is the one a bundle implies between a replica's IP and its container.
pub fn is_implied_order(o: &crate::cib::Order) -> bool {
    o.id.ends_with(IP_ORDER_SUFFIX)
}
