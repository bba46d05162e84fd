//! Node lifecycle: what a clean shutdown does to a node's resources (`shutdown-policy`
//! migrate|failover|freeze|stop), their failback when it rejoins (`failback`), node evacuation and
//! restore (node attribute `evacuate`), and lost nodes that cannot be fenced. A hook after
//! `observed` that only adds scores, bans and a no-live-migration flag.
//!
//! Fencing devices are left to Pacemaker's own rules: they must go wherever they can run.
//!
//! Memory: a resource moved off its node by a shutdown or an evacuation records where it came
//! from in two meta attributes, `origin-node` and `origin-cause` (`shutdown`|`evacuate`), as
//! LXD's `volatile.evacuate.origin`. The planner only proposes these records (`updates`); whoever
//! executes the transition writes them (the scenario runner here).

use std::fmt;

use crate::cib::{Cib, INFINITY, is_true};
use crate::observed::{Node, Observed, Role};
use crate::placement::node_available;

/// Cluster property or resource meta attribute (the resource's wins).
pub const SHUTDOWN_POLICY: &str = "shutdown-policy";
/// Resource meta attribute: move back to the origin node when it rejoins (default true).
pub const FAILBACK: &str = "failback";
/// Node attribute: the administrator's evacuation request.
pub const EVACUATE_ATTR: &str = "evacuate";
/// Resource meta attributes holding the record of where it came from and why.
pub const ORIGIN_NODE: &str = "origin-node";
pub const ORIGIN_CAUSE: &str = "origin-cause";

/// What a clean shutdown of its node does to a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownPolicy {
    /// Live-migrate away (stop and start where migration is off); fail back on rejoin.
    Migrate,
    /// Stop, then start elsewhere (never live); fail back on rejoin.
    Failover,
    /// Stop and hold: not started elsewhere; started again on the node when it rejoins.
    Freeze,
    /// Stop and hold until an administrator's `crm_resource --cleanup`, even after rejoin.
    Stop,
}

impl ShutdownPolicy {
    pub fn parse(s: &str) -> Option<ShutdownPolicy> {
        match s.to_ascii_lowercase().as_str() {
            "migrate" => Some(ShutdownPolicy::Migrate),
            "failover" => Some(ShutdownPolicy::Failover),
            "freeze" => Some(ShutdownPolicy::Freeze),
            "stop" => Some(ShutdownPolicy::Stop),
            _ => None,
        }
    }
}

impl fmt::Display for ShutdownPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShutdownPolicy::Migrate => "migrate",
            ShutdownPolicy::Failover => "failover",
            ShutdownPolicy::Freeze => "freeze",
            ShutdownPolicy::Stop => "stop",
        })
    }
}

/// What a lifecycle rule did to one resource, for the summary and the scenario log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub rsc: String,
    pub text: String,
}

/// A record to write once the transition has run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    SetOrigin {
        rsc: String,
        node: String,
        cause: String,
    },
    ClearOrigin {
        rsc: String,
        why: String,
    },
}

impl fmt::Display for Update {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Update::SetOrigin { rsc, node, cause } => {
                write!(f, "{rsc} {ORIGIN_NODE}={node} {ORIGIN_CAUSE}={cause}")
            }
            Update::ClearOrigin { rsc, why } => write!(f, "{rsc} origin cleared ({why})"),
        }
    }
}

/// Whether the administrator asked to evacuate this node.
pub fn evacuating(n: &Node) -> bool {
    n.attrs.get(EVACUATE_ATTR).is_some_and(|v| is_true(v))
}

fn policy_of(
    obs: &Observed,
    meta: &std::collections::BTreeMap<String, String>,
) -> Option<ShutdownPolicy> {
    meta.get(SHUTDOWN_POLICY)
        .map(String::as_str)
        .or_else(|| obs.option(SHUTDOWN_POLICY))
        .and_then(ShutdownPolicy::parse)
}

/// A node that can host this resource now: available and not being evacuated.
fn usable(obs: &Observed, ni: usize) -> bool {
    node_available(obs, ni) && !evacuating(&obs.nodes[ni])
}

/// Nodes that left the membership without shutting down (expected up, not fenced) where the last
/// recorded result of `rsc` says it was active: with fencing disabled, Pacemaker forgets them.
fn lost_with(cib: &Cib, rsc: &str) -> Vec<String> {
    let mut out = Vec::new();
    for st in &cib.status {
        let in_ccm = st.in_ccm.as_deref().is_some_and(is_true);
        let lost = !in_ccm && st.expected.as_deref() == Some("member");
        if !lost {
            continue;
        }
        let Some(l) = st.lrm.iter().find(|l| l.id == rsc) else {
            continue;
        };
        let mut ops: Vec<&crate::cib::RscOp> = l
            .ops
            .iter()
            .filter(|o| o.interval_ms == 0 && o.call_id >= 0)
            .collect();
        ops.sort_by_key(|o| o.call_id);
        let active = ops.last().is_some_and(|o| {
            o.rc_code == 0 && matches!(o.operation.as_str(), "start" | "migrate_from" | "monitor")
        });
        if active {
            out.push(st.uname.clone());
        }
    }
    out
}

/// Applies shutdown policies, origin records, evacuation and the lost-node guard to `obs`.
pub fn apply(cib: &Cib, obs: &mut Observed) -> Vec<Note> {
    let mut notes = Vec::new();
    let evacuated: Vec<usize> = (0..obs.nodes.len())
        .filter(|&ni| evacuating(&obs.nodes[ni]))
        .collect();
    for ri in 0..obs.resources.len() {
        let r = &obs.resources[ri];
        if !r.managed || r.orphan || r.is_stonith() {
            continue;
        }
        let mut scores: Vec<(usize, i64, String)> = Vec::new();
        let mut no_live = false;
        let mut note = None;
        for &ni in &evacuated {
            scores.push((
                ni,
                -INFINITY,
                format!("evacuate request on {}", obs.nodes[ni].uname),
            ));
        }
        let policy = policy_of(obs, &r.meta);
        let all = 0..obs.nodes.len();
        // A clean shutdown of the node it runs on.
        if r.role > Role::Stopped {
            for &ni in &r.running_on {
                let n = &obs.nodes[ni];
                if !n.shutdown || evacuating(n) {
                    continue;
                }
                match policy {
                    None | Some(ShutdownPolicy::Migrate) => {}
                    Some(ShutdownPolicy::Failover) => no_live = true,
                    Some(p @ (ShutdownPolicy::Freeze | ShutdownPolicy::Stop)) => {
                        for m in all.clone().filter(|&m| m != ni) {
                            scores.push((
                                m,
                                -INFINITY,
                                format!("{SHUTDOWN_POLICY}={p} holds it on {}", n.uname),
                            ));
                        }
                    }
                }
                if let Some(p) = policy {
                    note = Some(format!("{} shuts down: {SHUTDOWN_POLICY}={p}", n.uname));
                }
            }
        }
        // Where it came from.
        let origin = r.meta.get(ORIGIN_NODE).and_then(|n| obs.node_index(n));
        let cause = r.meta.get(ORIGIN_CAUSE).cloned().unwrap_or_default();
        if let Some(hn) = origin {
            let h = obs.nodes[hn].uname.clone();
            let back = usable(obs, hn);
            let failback = r.meta_bool(FAILBACK, true);
            match (cause.as_str(), policy) {
                ("evacuate", _) => {
                    if back {
                        scores.push((hn, INFINITY, format!("restore to origin {h}")));
                        note = Some(format!("{h} restored: moving back"));
                    } else {
                        note = Some(format!("evacuated from {h}"));
                    }
                }
                (_, Some(p @ ShutdownPolicy::Stop)) => {
                    for m in all.clone() {
                        scores.push((m, -INFINITY, format!("{SHUTDOWN_POLICY}={p} hold")));
                    }
                    note = Some(format!(
                        "held stopped since {h} shut down ({SHUTDOWN_POLICY}=stop); crm_resource --cleanup -r {} releases it",
                        r.id
                    ));
                }
                (_, Some(p @ ShutdownPolicy::Freeze)) => {
                    if back {
                        scores.push((hn, INFINITY, format!("{SHUTDOWN_POLICY}={p}: back on {h}")));
                        note = Some(format!("{h} rejoined: starting it there"));
                    } else {
                        for m in all.clone().filter(|&m| m != hn) {
                            scores.push((
                                m,
                                -INFINITY,
                                format!("{SHUTDOWN_POLICY}={p} holds it on {h}"),
                            ));
                        }
                        note = Some(format!(
                            "frozen until {h} rejoins ({SHUTDOWN_POLICY}=freeze)"
                        ));
                    }
                }
                _ => {
                    if back && failback {
                        scores.push((hn, INFINITY, format!("failback to {h}")));
                        note = Some(format!("{h} rejoined: failing back"));
                    } else if !back {
                        note = Some(format!("away from {h} until it rejoins"));
                    }
                }
            }
        }
        // A lost node it ran on that cannot be fenced: no second copy without proof. (Pacemaker
        // blocks it too; the note says why, for resources that opted in to lifecycle rules.)
        if r.role > Role::Stopped && policy.is_some() {
            for &ni in &r.running_on {
                let n = &obs.nodes[ni];
                if n.online || !n.unclean || obs.can_fence(ni) {
                    continue;
                }
                note = Some(format!(
                    "blocked: {} is lost and cannot be fenced ({}); confirm it is down with stonith_admin --confirm {}",
                    n.uname,
                    fence_gap(obs),
                    n.uname
                ));
            }
        }
        // With fencing disabled, Pacemaker restarts a lost node's resources at once. A resource
        // that `requires=fencing` waits instead, until the node is confirmed down (or rejoins).
        if !obs.stonith_enabled && r.meta.get("requires").map(String::as_str) == Some("fencing") {
            let lost = lost_with(cib, &r.id);
            if !lost.is_empty() {
                for m in all.clone() {
                    scores.push((
                        m,
                        -INFINITY,
                        format!("requires=fencing: {} lost", lost.join(", ")),
                    ));
                }
                note = Some(format!(
                    "blocked: it was active on lost {} and stonith-enabled=false (requires=fencing); confirm the node is down with stonith_admin --confirm {}",
                    lost.join(", "),
                    lost[0]
                ));
            }
        }
        let r = &mut obs.resources[ri];
        if no_live {
            r.meta.insert("allow-migrate".into(), "false".into());
        }
        for (ni, score, why) in scores {
            r.history_bans.push((Some(ni), score, why));
        }
        if let Some(text) = note {
            notes.push(Note {
                rsc: r.id.clone(),
                text,
            });
        }
    }
    notes
}

fn fence_gap(obs: &Observed) -> &'static str {
    if !obs.stonith_enabled {
        "stonith-enabled=false"
    } else if !obs.have_quorum {
        "no quorum"
    } else {
        "no fencing device and no watchdog"
    }
}

/// The origin records to write after this transition has run.
pub fn updates(cib: &Cib, obs: &Observed) -> Vec<Update> {
    let _ = cib;
    let mut out = Vec::new();
    for r in &obs.resources {
        if !r.managed || r.orphan || r.is_stonith() {
            continue;
        }
        let policy = policy_of(obs, &r.meta);
        match r.meta.get(ORIGIN_NODE) {
            None => {
                if r.role <= Role::Stopped || r.failed {
                    continue;
                }
                for &ni in &r.running_on {
                    let n = &obs.nodes[ni];
                    let cause = if evacuating(n) {
                        "evacuate"
                    } else if n.shutdown && policy.is_some() {
                        "shutdown"
                    } else {
                        continue;
                    };
                    out.push(Update::SetOrigin {
                        rsc: r.id.clone(),
                        node: n.uname.clone(),
                        cause: cause.into(),
                    });
                    break;
                }
            }
            Some(h) => {
                let Some(hn) = obs.node_index(h) else {
                    out.push(Update::ClearOrigin {
                        rsc: r.id.clone(),
                        why: format!("{h} is no longer a node"),
                    });
                    continue;
                };
                let cause = r.meta.get(ORIGIN_CAUSE).map(String::as_str).unwrap_or("");
                let back = usable(obs, hn);
                let home = r.role > Role::Stopped && !r.failed && r.running_on == [hn];
                if back && home {
                    out.push(Update::ClearOrigin {
                        rsc: r.id.clone(),
                        why: format!("back on {h}"),
                    });
                } else if back
                    && cause == "shutdown"
                    && matches!(
                        policy,
                        None | Some(ShutdownPolicy::Migrate | ShutdownPolicy::Failover)
                    )
                    && !r.meta_bool(FAILBACK, true)
                {
                    out.push(Update::ClearOrigin {
                        rsc: r.id.clone(),
                        why: format!("{h} rejoined, {FAILBACK}=false"),
                    });
                }
            }
        }
    }
    out
}

/// Writes one record into the configuration (as `crm_resource --meta` would).
pub fn apply_update(cib: &mut Cib, u: &Update) {
    match u {
        Update::SetOrigin { rsc, node, cause } => {
            crate::events::set_meta(cib, rsc, ORIGIN_NODE, Some(node));
            crate::events::set_meta(cib, rsc, ORIGIN_CAUSE, Some(cause));
        }
        Update::ClearOrigin { rsc, .. } => {
            crate::events::set_meta(cib, rsc, ORIGIN_NODE, None);
            crate::events::set_meta(cib, rsc, ORIGIN_CAUSE, None);
        }
    }
}

/// `crm_resource --cleanup`: releases a hold left by `shutdown-policy=stop`.
pub fn release_stop_hold(cib: &mut Cib, rsc: &str) {
    let Some(p) = crate::events::primitive(cib, rsc) else {
        return;
    };
    let meta = |name: &str| {
        p.meta
            .iter()
            .flat_map(|s| s.pairs.iter())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let policy = meta(SHUTDOWN_POLICY)
        .or_else(|| cib.options.get(SHUTDOWN_POLICY).cloned())
        .and_then(|v| ShutdownPolicy::parse(&v));
    if meta(ORIGIN_CAUSE).as_deref() == Some("shutdown") && policy == Some(ShutdownPolicy::Stop) {
        apply_update(
            cib,
            &Update::ClearOrigin {
                rsc: rsc.into(),
                why: "cleanup".into(),
            },
        );
    }
}

/// The origin records of every primitive, as log keys and values.
pub fn records(cib: &Cib) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut prims: Vec<&crate::cib::Primitive> = Vec::new();
    for r in &cib.resources {
        match r {
            crate::cib::ResourceDef::Primitive(p) => prims.push(p),
            crate::cib::ResourceDef::Group(g) => prims.extend(g.members.iter()),
        }
    }
    for p in prims {
        let get = |name: &str| {
            p.meta
                .iter()
                .flat_map(|s| s.pairs.iter())
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        if let Some(node) = get(ORIGIN_NODE) {
            let cause = get(ORIGIN_CAUSE).unwrap_or_default();
            out.push((format!("origin {}", p.id), format!("{node} ({cause})")));
        }
    }
    out
}

/// Renders the notes as a summary section (empty when no lifecycle rule is at work).
pub fn render_notes(notes: &[Note]) -> String {
    if notes.is_empty() {
        return String::new();
    }
    let mut s = String::from("Node Lifecycle:\n");
    for n in notes {
        s.push_str(&format!("  * {}: {}\n", n.rsc, n.text));
    }
    s
}
