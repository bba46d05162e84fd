//! Clone notifications (`notify=true`) as Pacemaker 2.1.5 adds them while the graph is built
//! (`pe_notif.c`, called from `clone_expand`): per clone action (start, stop, promote, demote)
//! the pseudo actions `C_pre_notify_T_0`, `C_confirmed-pre_notify_T_0`,
//! `C_post_notify_<T done>_0`, `C_confirmed-post_notify_<T done>_0`, one `notify` resource
//! action per instance that is to hear of it, the notification meta-attributes
//! (`notify_*_resource`, `notify_*_uname`...) on those and on the instances' own actions, their
//! orderings, and orderings after the clone remapped to its confirmed-post notification.
//!
//! Runs on the expanded graph, after unrunnable actions were propagated (Pacemaker creates the
//! notify actions when the clone is added to the graph); `graph::expand` places the new
//! actions in the synapse order with `Placement`.

use std::collections::BTreeMap;

use crate::graph::{EventKind, GraphAction, TransitionGraph};
use crate::observed::{Observed, Role};

/// What a notification adds to a graph action.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotifyMeta {
    /// Meta-attributes without the `CRM_meta_` prefix (`notify_type`...).
    pub meta: Vec<(String, String)>,
    /// The name DOT and crm_simulate give a notify action when it differs from its key
    /// (`notify_key_type` and `notify_key_operation`: `rsc_post_notify_stopped_0`).
    pub dot_key: Option<String>,
    /// A "post" notification: synapse priority INFINITY.
    pub infinity: bool,
    /// The action's own key (Pacemaker's uuid) when the graph's `operation_key` differs from it
    /// by more than the instance name: an instance's notification pseudo action ordered after
    /// fencing is `rsc:N_post_notify_stonith_0`, its operation key `rsc_post_notify_stop_0`.
    pub uuid: Option<String>,
}

/// Where the added actions go in the synapse order.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    /// Per instance resource: its notify actions, oldest first (they are its newest actions).
    pub per_rsc: BTreeMap<usize, Vec<usize>>,
    /// Per clone pseudo action ("running", "stopped"...): the notification pseudo actions
    /// created right after it, oldest first.
    pub after: BTreeMap<usize, Vec<usize>>,
}

/// The four clone tasks with notifications, in Pacemaker's creation order, with their
/// "complete" pseudo action.
const TASKS: [(&str, &str); 4] = [
    ("start", "running"),
    ("stop", "stopped"),
    ("promote", "promoted"),
    ("demote", "demoted"),
];

/// One clone task's notification pseudo actions (graph indexes).
#[derive(Debug, Clone, Copy)]
struct Pseudos {
    pre: usize,
    pre_done: usize,
    post: usize,
    post_done: usize,
}

fn new_action(g: &mut TransitionGraph, a: GraphAction) -> usize {
    g.actions.push(a);
    g.actions.len() - 1
}

fn words(v: &[String]) -> String {
    if v.is_empty() {
        " ".to_string()
    } else {
        v.join(" ")
    }
}

/// Instances' (resource, node) entries as Pacemaker lists them: sorted by instance id then
/// node id, one per instance.
fn entry_strings(obs: &Observed, mut list: Vec<(usize, Option<usize>)>) -> (String, String) {
    list.sort_by(|a, b| {
        obs.resources[a.0]
            .id
            .cmp(&obs.resources[b.0].id)
            .then_with(|| {
                let id = |n: Option<usize>| n.map(|n| obs.nodes[n].id.as_str());
                id(a.1).cmp(&id(b.1))
            })
    });
    let mut rscs = Vec::new();
    let mut unames = Vec::new();
    let mut last: Option<usize> = None;
    for (ri, ni) in list {
        if last == Some(ri) {
            continue;
        }
        last = Some(ri);
        rscs.push(obs.resources[ri].id.clone());
        if let Some(n) = ni {
            unames.push(obs.nodes[n].uname.clone());
        }
    }
    (words(&rscs), words(&unames))
}

/// Adds the notifications of every clone with `notify=true` to `g`.
/// `allowed`: per clone, the nodes it is allowed on when not all of them (see
/// `actions::Plan::clone_allowed`).
pub fn add(
    obs: &Observed,
    g: &mut TransitionGraph,
    allowed: &BTreeMap<usize, Vec<usize>>,
) -> Placement {
    let mut out = Placement::default();
    for gi in 0..obs.groups.len() {
        let Some(spec) = obs.groups[gi].clone.as_ref() else {
            continue;
        };
        if crate::clone_groups::is_instance(obs, gi) {
            continue;
        }
        if spec.notify {
            add_clone(obs, g, gi, allowed.get(&gi), &mut out);
            continue;
        }
        // (the primitive's own notify: its instances notify, the clone does not)
        let members = &obs.groups[gi].members;
        let notify = members.first().is_some_and(|&ri| {
            obs.resources[ri]
                .meta
                .get("notify")
                .is_some_and(|v| crate::cib::is_true(v))
        });
        if notify {
            for &ri in members {
                after_fencing(obs, g, members, ri, &pseudo_base(gi), &mut out);
            }
        }
    }
    out
}

fn clone_pseudo(g: &TransitionGraph, gi: usize, task: &str) -> Option<usize> {
    g.actions.iter().position(|a| {
        a.rsc.is_none() && a.group == Some(gi) && a.event == EventKind::Pseudo && a.task == task
    })
}

/// A pseudo action of clone `gi`, to fill in.
fn pseudo_base(gi: usize) -> GraphAction {
    GraphAction {
        key: String::new(),
        task: String::new(),
        rsc: None,
        group: Some(gi),
        node: None,
        interval_ms: 0,
        event: EventKind::Pseudo,
        runnable: true,
        migrate: None,
        expected_rc: crate::cib::rc::OK,
        call_id: None,
        optional: false,
        notify: None,
    }
}

fn add_clone(
    obs: &Observed,
    g: &mut TransitionGraph,
    gi: usize,
    allowed: Option<&Vec<usize>>,
    out: &mut Placement,
) {
    let group = &obs.groups[gi];
    let clone_id = group.id.clone();
    let instances: Vec<usize> = group.members.clone();
    let base = pseudo_base(gi);
    // The pseudo actions, per task.
    let mut data: Vec<Option<(Pseudos, usize, usize)>> = Vec::new();
    for (task, done) in TASKS {
        let (Some(action), Some(complete)) = (clone_pseudo(g, gi, task), clone_pseudo(g, gi, done))
        else {
            data.push(None);
            continue;
        };
        if g.actions[action].optional {
            data.push(None);
            continue;
        }
        let complete_runnable = g.actions[complete].runnable;
        // (the "pre" pseudo actions sum up the instances' actions too: none of them runnable,
        // nor are they, `summary_action_flags`)
        let action_runnable = g.actions[action].runnable;
        let mut mk = |ty: &str, key_task: &str, op: &str, notify_type: &str, runnable: bool| {
            let key = format!("{clone_id}_{ty}_notify_{key_task}_0");
            let meta = vec![
                ("notify_key_type".to_string(), ty.to_string()),
                ("notify_key_operation".to_string(), key_task.to_string()),
                ("notify_type".to_string(), notify_type.to_string()),
                ("notify_operation".to_string(), task.to_string()),
            ];
            new_action(
                g,
                GraphAction {
                    key,
                    task: op.to_string(),
                    runnable,
                    notify: Some(Box::new(NotifyMeta {
                        meta,
                        dot_key: None,
                        infinity: notify_type == "post",
                        uuid: None,
                    })),
                    ..base.clone()
                },
            )
        };
        let p = Pseudos {
            pre: mk("pre", task, "notify", "pre", action_runnable),
            pre_done: mk("confirmed-pre", task, "notified", "pre", action_runnable),
            post: mk("post", done, "notify", "post", complete_runnable),
            post_done: mk(
                "confirmed-post",
                done,
                "notified",
                "post",
                complete_runnable,
            ),
        };
        g.edges.push((p.pre, p.pre_done));
        g.edges.push((p.pre_done, action));
        g.edges.push((complete, p.post));
        g.edges.push((p.post, p.post_done));
        g.edges.push((p.pre_done, p.post));
        out.after
            .insert(complete, vec![p.pre, p.pre_done, p.post, p.post_done]);
        data.push(Some((p, action, complete)));
    }
    let pseudos = |t: usize| data[t].map(|d| d.0);
    // Orderings between the tasks' notifications.
    let mut cross = |a: Option<Pseudos>, b: Option<Pseudos>| {
        if let (Some(a), Some(b)) = (a, b) {
            g.edges.push((a.post_done, b.pre));
        }
    };
    cross(pseudos(1), pseudos(0));
    if group.clone.as_ref().is_some_and(|c| c.promotable.is_some()) {
        cross(pseudos(1), pseudos(2));
        cross(pseudos(0), pseudos(2));
        cross(pseudos(3), pseudos(2));
        cross(pseudos(3), pseudos(0));
        cross(pseudos(3), pseudos(1));
    }
    // Instances stopped by fencing: their own notifications, ordered after the fencing.
    for &ri in &instances {
        after_fencing(obs, g, &instances, ri, &base, out);
    }
    if data.iter().all(Option::is_none) {
        return;
    }

    // The clone's state and actions, as notification lists.
    let mut active = Vec::new();
    let mut inactive = Vec::new();
    let mut promoted = Vec::new();
    let mut unpromoted = Vec::new();
    let mut acts: [Vec<(usize, Option<usize>)>; 4] = Default::default();
    for &ri in &instances {
        let r = &obs.resources[ri];
        let entry = (ri, r.running_on.first().copied());
        match r.role {
            Role::Started => active.push(entry),
            Role::Unpromoted => {
                unpromoted.push(entry);
                active.push(entry);
            }
            Role::Promoted => {
                promoted.push(entry);
                active.push(entry);
            }
            Role::Stopped | Role::Unknown => inactive.push(entry),
        }
        for a in g
            .actions
            .iter()
            .filter(|a| a.rsc == Some(ri) && !a.optional)
        {
            let Some(ni) = a.node else { continue };
            let Some(t) = TASKS.iter().position(|(t, _)| *t == a.task) else {
                continue;
            };
            if !(a.runnable || (t == 1 && obs.nodes[ni].unclean)) {
                continue;
            }
            acts[t].push((ri, Some(ni)));
        }
    }
    let any = |t: usize| !acts[t].is_empty();
    let mut keys: Vec<(String, String)> = Vec::new();
    let mut push = |k: &str, v: String| keys.push((k.to_string(), v));
    // Each list under its name(s), in the order Pacemaker writes them (`TASKS` index in `acts`;
    // the unpromoted and promoted lists also under their legacy names).
    let lists: [(&[&str], _); 7] = [
        (&["stop"], acts[1].clone()),
        (&["start"], acts[0].clone()),
        (&["demote"], acts[3].clone()),
        (&["promote"], acts[2].clone()),
        (&["active"], active),
        (&["unpromoted", "slave"], unpromoted),
        (&["promoted", "master"], promoted),
    ];
    for (names, list) in lists {
        let (r, n) = entry_strings(obs, list);
        for name in names {
            push(&format!("notify_{name}_resource"), r.clone());
            push(&format!("notify_{name}_uname"), n.clone());
        }
    }
    let (r, _) = entry_strings(
        obs,
        inactive.into_iter().map(|(ri, _)| (ri, None)).collect(),
    );
    push("notify_inactive_resource", r);
    // (the clone's allowed nodes: every node in a symmetric cluster; a bundle's inner clone
    // knows only the nodes there were when it was unpacked)
    let known: Vec<usize> = match allowed {
        Some(nodes) => nodes.to_vec(),
        None => (0..obs.nodes.len()).collect(),
    };
    let mut available: Vec<String> = known
        .into_iter()
        .filter(|&ni| !crate::bundles::node_unknown_to(obs, gi, ni))
        .map(|ni| obs.nodes[ni].uname.clone())
        .collect();
    available.sort();
    push("notify_available_uname", words(&available));
    let all: Vec<String> = obs.nodes.iter().map(|n| n.uname.clone()).collect();
    // With container-attribute-target=host, each node's host as well: a guest node's is where
    // its container runs now (the guest itself when the container runs nowhere).
    let host_target = instances.first().is_some_and(|&ri| {
        obs.resources[ri]
            .meta
            .get("container-attribute-target")
            .is_some_and(|v| v == "host")
    });
    if host_target {
        let hosts: Vec<String> = obs
            .nodes
            .iter()
            .map(|n| {
                let container = n
                    .remote
                    .as_ref()
                    .and_then(|rn| rn.connection)
                    .and_then(|c| obs.resources[c].container);
                match container.and_then(|c| obs.resources[c].running_on.first()) {
                    Some(&h) => obs.nodes[h].uname.clone(),
                    None => n.uname.clone(),
                }
            })
            .collect();
        push("notify_all_hosts", words(&hosts));
    }
    push("notify_all_uname", words(&all));

    // The instances' own actions carry the lists.
    for a in g.actions.iter_mut() {
        let Some(ri) = a.rsc else { continue };
        if !instances.contains(&ri)
            || a.optional
            || a.node.is_none()
            || !TASKS.iter().any(|(t, _)| *t == a.task)
        {
            continue;
        }
        let n = a.notify.get_or_insert_with(Default::default);
        n.meta.extend(keys.iter().cloned());
    }

    // The notify actions, task by task, instance by instance.
    for (t, (task, done)) in TASKS.iter().enumerate() {
        let Some((p, _, _)) = data[t] else { continue };
        if t != 1 && !any(t) {
            continue;
        }
        for &ri in &instances {
            let r = &obs.resources[ri];
            let find = |g: &TransitionGraph, task: &str| {
                g.actions.iter().position(|a| {
                    a.rsc == Some(ri) && a.task == task && a.event != EventKind::Cluster
                })
            };
            let mut notify = |g: &mut TransitionGraph, node: usize, post: bool| {
                let (op, op_done) = if post {
                    (p.post, p.post_done)
                } else {
                    (p.pre, p.pre_done)
                };
                if post {
                    // Recurring monitors wait for every "post" notification.
                    let mons: Vec<usize> = (0..g.actions.len())
                        .filter(|&m| {
                            let a = &g.actions[m];
                            a.rsc == Some(ri) && a.task == "monitor" && a.interval_ms > 0
                        })
                        .collect();
                    for m in mons {
                        g.edges.push((op_done, m));
                    }
                }
                if !obs.nodes[node].online || !g.actions[op].runnable {
                    return;
                }
                let name = crate::clones::key_name(r);
                let ty = if post { "post" } else { "pre" };
                let key_task = if post { done } else { task };
                let meta = notify_meta(g, op, &keys);
                let key = format!("{name}_{ty}_notify_{task}_0");
                // (one created after fencing already: its meta-attributes come first)
                if let Some(a) = extend_existing_notify(g, ri, node, &key, &meta) {
                    g.edges.push((op, a));
                    g.edges.push((a, op_done));
                    return;
                }
                let a = new_action(
                    g,
                    GraphAction {
                        key,
                        task: "notify".into(),
                        rsc: Some(ri),
                        group: None,
                        node: Some(node),
                        event: EventKind::RscOp,
                        // (a guest whose host cannot be fenced runs nothing)
                        runnable: !crate::guest::host_unfenceable(obs, node),
                        notify: Some(Box::new(NotifyMeta {
                            meta,
                            dot_key: r
                                .clone_name
                                .as_ref()
                                .map(|c| format!("{c}_{ty}_notify_{key_task}_0")),
                            infinity: post,
                            uuid: None,
                        })),
                        ..base.clone()
                    },
                );
                g.edges.push((op, a));
                g.edges.push((a, op_done));
                out.per_rsc.entry(ri).or_default().push(a);
            };
            if matches!(*task, "stop" | "demote")
                && !matches!(r.role, Role::Stopped | Role::Unknown)
            {
                let stop = find(g, "stop");
                for &node in &r.running_on {
                    let implied = stop.is_some_and(|s| g.actions[s].event == EventKind::Pseudo);
                    if implied && being_fenced(obs, node) {
                        continue;
                    }
                    notify(g, node, false);
                    if *task == "demote" || stop.is_none_or(|s| g.actions[s].optional) {
                        notify(g, node, true);
                    }
                }
            }
            if matches!(*task, "start" | "promote") {
                let start = find(g, "start");
                let stop = find(g, "stop");
                let next = match start {
                    Some(s) => g.actions[s].node,
                    None if stop.is_none() && !matches!(r.role, Role::Stopped | Role::Unknown) => {
                        r.running_on.first().copied()
                    }
                    None => None,
                };
                let Some(node) = next else { continue };
                // (behind a remote connection whose start cannot run: no notifications,
                // `find_remote_start`)
                let connection = start
                    .and_then(|s| g.actions[s].node)
                    .and_then(|n| obs.nodes[n].remote.as_ref())
                    .and_then(|rn| rn.connection);
                let blocked = connection.is_some_and(|c| {
                    g.actions.iter().any(|a| {
                        a.rsc == Some(c)
                            && a.task == "start"
                            && a.event != EventKind::Cluster
                            && !a.runnable
                    })
                });
                if blocked {
                    continue;
                }
                if *task != "start" || start.is_none_or(|s| g.actions[s].optional) {
                    notify(g, node, false);
                }
                notify(g, node, true);
            }
        }
    }

    // Orderings after the clone's action (by another resource) wait for its notifications.
    let is_own = |a: &GraphAction| match (a.rsc, a.group) {
        (Some(ri), _) => crate::clone_groups::clone_of(obs, ri) == Some(gi),
        (None, Some(g2)) => g2 == gi || crate::clone_groups::parent_clone(obs, g2) == Some(gi),
        (None, None) => true,
    };
    for &(p, action, complete) in data.iter().flatten() {
        for e in 0..g.edges.len() {
            let (f, to) = g.edges[e];
            if (f == action || f == complete) && !is_own(&g.actions[to]) {
                g.edges[e].0 = p.post_done;
            }
        }
    }
}

/// Whether `node` is fenced so that a pseudo stop there is implied (Pacemaker checks
/// `unclean || remote_requires_reset`: a guest node whose host is fenced is online again once
/// its connection is assigned, but still due for a reset).
fn being_fenced(obs: &Observed, node: usize) -> bool {
    let n = &obs.nodes[node];
    n.unclean || n.remote.as_ref().is_some_and(|rn| rn.requires_reset)
}

/// The `notify` action of instance `ri` on `node` with this key, if one was created already.
/// The notify action `key` of resource `ri` on `node` made earlier (after fencing), given
/// `meta` after its own meta-attributes (which therefore win).
fn extend_existing_notify(
    g: &mut TransitionGraph,
    ri: usize,
    node: usize,
    key: &str,
    meta: &[(String, String)],
) -> Option<usize> {
    let a = g.actions.iter().position(|a| {
        a.rsc == Some(ri)
            && a.node == Some(node)
            && a.task == "notify"
            && a.event == EventKind::RscOp
            && a.key == key
    })?;
    if let Some(n) = g.actions[a].notify.as_mut() {
        n.meta.extend(meta.iter().cloned());
    }
    Some(a)
}

/// The meta-attributes of a notification made for pseudo action `op` (its own, then `keys`).
fn notify_meta(g: &TransitionGraph, op: usize, keys: &[(String, String)]) -> Vec<(String, String)> {
    let mut meta = g.actions[op]
        .notify
        .as_ref()
        .map(|n| n.meta.clone())
        .unwrap_or_default();
    meta.extend(keys.iter().cloned());
    meta
}

/// Notifications for the stops of instance `ri` that fencing implies (Pacemaker's
/// `pe__order_notifs_after_fencing`, called as the stop is ordered after the fencing): per
/// such stop the instance's own pseudo actions `rsc:N_post_notify_stonith_0` and
/// `rsc:N_confirmed-post_notify_stonith_0` after the fencing, and a "post" notification of the
/// stop on every other instance that stays (`instances`), with `notify_stop_resource` and
/// `notify_stop_uname` naming only this instance and node. The clone's own stop notifications
/// come later and reuse those notify actions, adding their orderings; the meta-attributes set
/// here (`notify_key_operation` "stonith", the stop lists) are kept.
fn after_fencing(
    obs: &Observed,
    g: &mut TransitionGraph,
    instances: &[usize],
    ri: usize,
    base: &GraphAction,
    out: &mut Placement,
) {
    let r = &obs.resources[ri];
    if !r.managed {
        return;
    }
    let stops: Vec<usize> = (0..g.actions.len())
        .filter(|&s| {
            let a = &g.actions[s];
            a.rsc == Some(ri) && a.task == "stop" && a.event != EventKind::Cluster
        })
        .collect();
    for stop in stops {
        let Some(target) = g.actions[stop].node else {
            continue;
        };
        let Some(fence) = g.actions.iter().position(|a| {
            a.node == Some(target)
                && matches!(a.event, EventKind::Fence | EventKind::GuestFence { .. })
        }) else {
            continue;
        };
        let (runnable, optional) = (g.actions[fence].runnable, g.actions[fence].optional);
        let id = &r.id;
        let pseudo = |ty: &str, task: &str| {
            let uuid = format!("{id}_{ty}_notify_stonith_0");
            let (key, uuid, dot_key) = match &r.clone_name {
                Some(c) => {
                    let key = if task == "notify" {
                        format!("{c}_post_notify_stop_0")
                    } else {
                        format!("{c}_{task}_0")
                    };
                    (key, Some(uuid), Some(format!("{c}_{ty}_notify_stonith_0")))
                }
                None => (uuid, None, None),
            };
            let meta = [
                ("notify_key_type", ty),
                ("notify_key_operation", "stonith"),
                ("notify_type", "post"),
                ("notify_operation", "stop"),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
            GraphAction {
                key,
                task: task.to_string(),
                rsc: Some(ri),
                group: None,
                runnable,
                optional,
                notify: Some(Box::new(NotifyMeta {
                    meta,
                    dot_key,
                    infinity: true,
                    uuid,
                })),
                ..base.clone()
            }
        };
        let post = new_action(g, pseudo("post", "notify"));
        let post_done = new_action(g, pseudo("confirmed-post", "notified"));
        g.edges.push((fence, post));
        g.edges.push((post, post_done));
        out.per_rsc.entry(ri).or_default().extend([post, post_done]);
        let keys = [
            ("notify_stop_resource".to_string(), id.clone()),
            (
                "notify_stop_uname".to_string(),
                obs.nodes[target].uname.clone(),
            ),
        ];
        for &other in instances {
            // (the instance's own actions carry the stop lists)
            for a in g.actions.iter_mut() {
                if a.rsc == Some(other)
                    && !a.optional
                    && a.node.is_some()
                    && TASKS.iter().any(|(t, _)| *t == a.task)
                {
                    let n = a.notify.get_or_insert_with(Default::default);
                    n.meta.extend(keys.iter().cloned());
                }
            }
            let o = &obs.resources[other];
            if matches!(o.role, Role::Stopped | Role::Unknown) {
                continue;
            }
            let own_stop = g.actions.iter().position(|a| {
                a.rsc == Some(other) && a.task == "stop" && a.event != EventKind::Cluster
            });
            // Recurring monitors wait for the notifications.
            let mons: Vec<usize> = (0..g.actions.len())
                .filter(|&m| {
                    let a = &g.actions[m];
                    a.rsc == Some(other) && a.task == "monitor" && a.interval_ms > 0
                })
                .collect();
            for &node in &o.running_on {
                let implied = own_stop.is_some_and(|s| g.actions[s].event == EventKind::Pseudo);
                if implied && being_fenced(obs, node) {
                    continue;
                }
                if own_stop.is_some_and(|s| !g.actions[s].optional) {
                    continue;
                }
                for &m in &mons {
                    g.edges.push((post_done, m));
                }
                if !obs.nodes[node].online || !g.actions[post].runnable {
                    continue;
                }
                let name = crate::clones::key_name(o);
                let key = format!("{name}_post_notify_stop_0");
                let meta = notify_meta(g, post, &keys);
                let a = match extend_existing_notify(g, other, node, &key, &meta) {
                    Some(a) => a,
                    None => {
                        let a = new_action(
                            g,
                            GraphAction {
                                key,
                                task: "notify".into(),
                                rsc: Some(other),
                                group: None,
                                node: Some(node),
                                event: EventKind::RscOp,
                                notify: Some(Box::new(NotifyMeta {
                                    meta,
                                    dot_key: o
                                        .clone_name
                                        .as_ref()
                                        .map(|c| format!("{c}_post_notify_stonith_0")),
                                    infinity: true,
                                    uuid: None,
                                })),
                                ..base.clone()
                            },
                        );
                        out.per_rsc.entry(other).or_default().push(a);
                        a
                    }
                };
                g.edges.push((post, a));
                g.edges.push((a, post_done));
            }
        }
    }
}
