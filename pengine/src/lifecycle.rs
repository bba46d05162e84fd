//! Node lifecycle: what a clean shutdown does to a node's resources (`shutdown-policy`
//! migrate|failover|freeze|stop), their failback when it rejoins (`failback`), node evacuation and
//! restore (node attribute `evacuate`), and lost nodes that cannot be fenced. A hook after
//! `observed` that only adds scores, bans and a no-live-migration flag.
//!
//! Fencing devices are left to Pacemaker's own rules: they must go wherever they can run.
//!
//! Memory: a resource moved off its node by a shutdown or an evacuation records where it came
//! from in two meta attributes, `origin-node` and `origin-cause` (`shutdown`|`evacuate`|`loss`), as
//! LXD's `volatile.evacuate.origin`. The planner only proposes these records (`updates`); whoever
//! executes the transition writes them (the scenario runner here).

use std::fmt;

use crate::cib::{Cib, INFINITY, is_true, parse_interval_ms};
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
/// Resource meta attribute: when the record was written (seconds since the epoch).
pub const ORIGIN_SINCE: &str = "origin-since";
/// Resource meta attribute or cluster property: how long `freeze` holds a resource on a node
/// that is down (Pacemaker's `shutdown-lock-limit`); unset or 0: until the node rejoins.
pub const FREEZE_LIMIT: &str = "shutdown-lock-limit";

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
        /// When (seconds since the epoch); not shown in the log line.
        since: i64,
    },
    ClearOrigin {
        rsc: String,
        why: String,
    },
}

impl fmt::Display for Update {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Update::SetOrigin {
                rsc, node, cause, ..
            } => {
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
            o.rc_code == crate::cib::rc::OK
                && matches!(o.operation.as_str(), "start" | "migrate_from" | "monitor")
        });
        if active {
            out.push(st.uname.clone());
        }
    }
    out
}

/// What the lifecycle rules decide for one resource: scores on nodes (each with its reason, and
/// whether Pacemaker's own scheduler must see it too, see `pins`), no live migration, a note.
struct Decision {
    ri: usize,
    scores: Vec<Score>,
    no_live: bool,
    note: Option<String>,
}

struct Score {
    ni: usize,
    score: i64,
    why: String,
    /// Mirrored into Pacemaker's configuration by `pengine node` (`pins`): the rules that exist
    /// only here (evacuation, shutdown holds, failback). The lost-node guards are not: Pacemaker
    /// has its own.
    pinned: bool,
}

fn score(ni: usize, score: i64, why: String) -> Score {
    Score {
        ni,
        score,
        why,
        pinned: true,
    }
}

/// The freeze limit in seconds (`shutdown-lock-limit`, resource meta or cluster property; 0 or
/// unset: no limit), as Pacemaker's `shutdown-lock` has.
fn freeze_limit_s(obs: &Observed, meta: &std::collections::BTreeMap<String, String>) -> i64 {
    meta.get(FREEZE_LIMIT)
        .map(String::as_str)
        .or_else(|| obs.option(FREEZE_LIMIT))
        .map(|v| (parse_interval_ms(v) / 1000) as i64)
        .unwrap_or(0)
}

/// The lifecycle rules for every resource.
fn decide(cib: &Cib, obs: &Observed) -> Vec<Decision> {
    let mut out = Vec::new();
    let evacuated: Vec<usize> = (0..obs.nodes.len())
        .filter(|&ni| evacuating(&obs.nodes[ni]))
        .collect();
    for (ri, r) in obs.resources.iter().enumerate() {
        if !r.managed || r.orphan || r.is_stonith() {
            continue;
        }
        let mut scores: Vec<Score> = Vec::new();
        let mut no_live = false;
        let mut note = None;
        for &ni in &evacuated {
            scores.push(score(
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
                            scores.push(score(
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
                // Recovered after its node was lost: fails back like a shutdown-policy=migrate
                // resource, whatever its policy says about shutdowns.
                ("loss", _) => {
                    if back && failback {
                        scores.push(score(hn, INFINITY, format!("failback to {h}")));
                        note = Some(format!("{h} rejoined after its loss: failing back"));
                    } else if !back {
                        note = Some(if failback {
                            format!(
                                "{h} lost: recovered elsewhere once fenced, fails back when it rejoins"
                            )
                        } else {
                            format!("{h} lost: recovered elsewhere once fenced ({FAILBACK}=false)")
                        });
                    }
                }
                ("evacuate", _) => {
                    if back {
                        scores.push(score(hn, INFINITY, format!("restore to origin {h}")));
                        note = Some(format!("{h} restored: moving back"));
                    } else {
                        note = Some(format!("evacuated from {h}"));
                    }
                }
                (_, Some(p @ ShutdownPolicy::Stop)) => {
                    for m in all.clone() {
                        scores.push(score(m, -INFINITY, format!("{SHUTDOWN_POLICY}={p} hold")));
                    }
                    note = Some(format!(
                        "held stopped since {h} shut down ({SHUTDOWN_POLICY}=stop); crm_resource --cleanup -r {} releases it",
                        r.id
                    ));
                }
                (_, Some(p @ ShutdownPolicy::Freeze)) => {
                    let limit_s = freeze_limit_s(obs, &r.meta);
                    let since = r.meta.get(ORIGIN_SINCE).and_then(|v| v.parse::<i64>().ok());
                    let expired =
                        limit_s > 0 && since.is_some_and(|t| obs.now >= t.saturating_add(limit_s));
                    if back {
                        scores.push(score(
                            hn,
                            INFINITY,
                            format!("{SHUTDOWN_POLICY}={p}: back on {h}"),
                        ));
                        note = Some(if expired {
                            format!("{h} rejoined: moving back ({SHUTDOWN_POLICY}=freeze)")
                        } else {
                            format!("{h} rejoined: starting it there")
                        });
                    } else if expired {
                        note = Some(format!(
                            "freeze on {h} ended after {FREEZE_LIMIT}={limit_s}s: recovered elsewhere until {h} rejoins"
                        ));
                    } else {
                        for m in all.clone().filter(|&m| m != hn) {
                            scores.push(score(
                                m,
                                -INFINITY,
                                format!("{SHUTDOWN_POLICY}={p} holds it on {h}"),
                            ));
                        }
                        note = Some(if limit_s > 0 {
                            format!(
                                "frozen until {h} rejoins or {FREEZE_LIMIT}={limit_s}s pass ({SHUTDOWN_POLICY}=freeze)"
                            )
                        } else {
                            format!("frozen until {h} rejoins ({SHUTDOWN_POLICY}=freeze)")
                        });
                    }
                }
                _ => {
                    if back && failback {
                        scores.push(score(hn, INFINITY, format!("failback to {h}")));
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
                    scores.push(Score {
                        ni: m,
                        score: -INFINITY,
                        why: format!("requires=fencing: {} lost", lost.join(", ")),
                        pinned: false,
                    });
                }
                note = Some(format!(
                    "blocked: it was active on lost {} and stonith-enabled=false (requires=fencing); confirm the node is down with stonith_admin --confirm {}",
                    lost.join(", "),
                    lost[0]
                ));
            }
        }
        out.push(Decision {
            ri,
            scores,
            no_live,
            note,
        });
    }
    out
}

/// Applies shutdown policies, origin records, evacuation and the lost-node guard to `obs`.
pub fn apply(cib: &Cib, obs: &mut Observed) -> Vec<Note> {
    let mut notes = Vec::new();
    for d in decide(cib, obs) {
        let r = &mut obs.resources[d.ri];
        if d.no_live {
            r.meta.insert("allow-migrate".into(), "false".into());
        }
        for s in d.scores {
            r.history_bans.push((Some(s.ni), s.score, s.why));
        }
        if let Some(text) = d.note {
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
                    } else if !n.online && n.unclean && policy.is_some() {
                        // Lost: recovered elsewhere once the node is fenced.
                        "loss"
                    } else {
                        continue;
                    };
                    out.push(Update::SetOrigin {
                        rsc: r.id.clone(),
                        node: n.uname.clone(),
                        cause: cause.into(),
                        since: obs.now,
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
                    && (cause == "loss"
                        || (cause == "shutdown"
                            && matches!(
                                policy,
                                None | Some(ShutdownPolicy::Migrate | ShutdownPolicy::Failover)
                            )))
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
        Update::SetOrigin {
            rsc,
            node,
            cause,
            since,
        } => {
            crate::events::set_meta(cib, rsc, ORIGIN_NODE, Some(node));
            crate::events::set_meta(cib, rsc, ORIGIN_CAUSE, Some(cause));
            crate::events::set_meta(cib, rsc, ORIGIN_SINCE, Some(&since.to_string()));
        }
        Update::ClearOrigin { rsc, .. } => {
            crate::events::set_meta(cib, rsc, ORIGIN_NODE, None);
            crate::events::set_meta(cib, rsc, ORIGIN_CAUSE, None);
            crate::events::set_meta(cib, rsc, ORIGIN_SINCE, None);
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
    for p in cib.primitives() {
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

// ---- Mirroring the rules into a real cluster (`pengine node`) ----
//
// Pacemaker's own scheduler knows neither `evacuate`, `shutdown-policy` nor the origin records.
// `sync` turns what the rules above decide into plain Pacemaker configuration: the records as
// resource meta attributes, and every pinned score as a `rsc_location` whose id starts with
// `PIN_PREFIX` (one per resource and node). The `pengine node` command reads the live CIB, calls
// `sync` and writes the changes with crm_resource, crm_attribute and cibadmin.

/// Id prefix of the location constraints `sync` owns: it adds and removes only these.
pub const PIN_PREFIX: &str = "hl-lifecycle-";

/// A node-level request made through `pengine node`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeRequest {
    /// Move everything away from the node (live where allowed), remembering where it was.
    Evacuate(String),
    /// Withdraw the evacuation: what came from the node goes back.
    Restore(String),
    /// Pacemaker is about to be stopped cleanly on the node: record where its resources run
    /// (and hold `freeze`/`stop` ones) before the controller moves them.
    Shutdown(String),
    /// No new request: bring records and constraints up to date (a node rejoined, a resource
    /// came home, a freeze limit passed).
    Sync,
}

impl fmt::Display for NodeRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeRequest::Evacuate(n) => write!(f, "evacuate {n}"),
            NodeRequest::Restore(n) => write!(f, "restore {n}"),
            NodeRequest::Shutdown(n) => write!(f, "shutdown {n}"),
            NodeRequest::Sync => f.write_str("sync"),
        }
    }
}

/// A location score a lifecycle rule needs Pacemaker's scheduler to see.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pin {
    /// The constraint's id.
    pub id: String,
    /// The resource.
    pub rsc: String,
    /// The node.
    pub node: String,
    /// The score (±1,000,000 is INFINITY).
    pub score: i64,
}

impl Pin {
    /// The `rsc_location` element, for `cibadmin -C -o constraints -X`.
    pub fn xml(&self) -> String {
        format!(
            "<rsc_location id=\"{}\" rsc=\"{}\" node=\"{}\" score=\"{}\"/>",
            xml_attr(&self.id),
            xml_attr(&self.rsc),
            xml_attr(&self.node),
            score_word(self.score)
        )
    }
}

impl Pin {
    /// The element naming only its id, for `cibadmin -D -o constraints -X`.
    pub fn id_only_xml(&self) -> String {
        format!("<rsc_location id=\"{}\"/>", xml_attr(&self.id))
    }
}

fn score_word(score: i64) -> String {
    if score >= INFINITY {
        "INFINITY".into()
    } else if score <= -INFINITY {
        "-INFINITY".into()
    } else {
        score.to_string()
    }
}

fn xml_attr(v: &str) -> String {
    v.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// One change to the live CIB, in the order `sync` returns them (records first, so they exist
/// before any constraint makes Pacemaker move a resource).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CibChange {
    /// `crm_resource -r RSC --meta -p NAME -v VALUE` (`None`: `--meta -d NAME`).
    Meta {
        /// The resource.
        rsc: String,
        /// The meta-attribute.
        name: String,
        /// Its new value; `None` deletes it.
        value: Option<String>,
    },
    /// `cibadmin -C -o constraints -X <rsc_location .../>`.
    AddPin(Pin),
    /// `cibadmin -D -o constraints -X <rsc_location id=ID/>`.
    RemovePin {
        /// The constraint's id.
        id: String,
    },
    /// `crm_attribute -l forever -N NODE -n NAME -v VALUE` (`None`: `-D`).
    NodeAttr {
        /// The node.
        node: String,
        /// The attribute.
        name: String,
        /// Its new value; `None` deletes it.
        value: Option<String>,
    },
}

impl fmt::Display for CibChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CibChange::Meta {
                rsc,
                name,
                value: Some(v),
            } => write!(f, "{rsc}: meta {name}={v}"),
            CibChange::Meta {
                rsc,
                name,
                value: None,
            } => write!(f, "{rsc}: meta {name} deleted"),
            CibChange::AddPin(p) => write!(
                f,
                "{}: location {} {} on {} ({})",
                p.rsc,
                p.id,
                score_word(p.score),
                p.node,
                if p.score > 0 { "prefer" } else { "ban" }
            ),
            CibChange::RemovePin { id } => write!(f, "location {id} removed"),
            CibChange::NodeAttr {
                node,
                name,
                value: Some(v),
            } => write!(f, "{node}: node attribute {name}={v}"),
            CibChange::NodeAttr {
                node,
                name,
                value: None,
            } => write!(f, "{node}: node attribute {name} deleted"),
        }
    }
}

/// Why `sync` refused a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LifecycleError {
    /// The request names a node the CIB does not have.
    #[error("{request}: no node named '{node}' in the CIB")]
    UnknownNode {
        /// The request as text.
        request: String,
        /// The node it names.
        node: String,
    },
}

/// The constraints the rules need for `obs` (one per resource and node: the pinned scores
/// summed, as placement sums them), sorted by id.
pub fn pins(cib: &Cib, obs: &Observed) -> Vec<Pin> {
    let mut sums: std::collections::BTreeMap<(usize, usize), i64> = Default::default();
    for d in decide(cib, obs) {
        for s in d.scores.iter().filter(|s| s.pinned) {
            let e = sums.entry((d.ri, s.ni)).or_insert(0);
            *e = e.saturating_add(s.score).clamp(-INFINITY, INFINITY);
        }
    }
    let mut out: Vec<Pin> = sums
        .into_iter()
        .filter(|&(_, score)| score != 0)
        .map(|((ri, ni), score)| {
            let rsc = obs.resources[ri].id.clone();
            let node = obs.nodes[ni].uname.clone();
            Pin {
                id: format!("{PIN_PREFIX}{rsc}-{node}"),
                rsc,
                node,
                score,
            }
        })
        .collect();
    out.sort();
    out
}

/// The origin record of every primitive: (rsc, attribute) -> value.
fn record_attrs(cib: &Cib) -> std::collections::BTreeMap<(String, String), String> {
    let mut out = std::collections::BTreeMap::new();
    for p in cib.primitives() {
        for (k, v) in p.meta.iter().flat_map(|s| s.pairs.iter()) {
            if [ORIGIN_NODE, ORIGIN_CAUSE, ORIGIN_SINCE].contains(&k.as_str()) {
                out.insert((p.id.clone(), k.clone()), v.clone());
            }
        }
    }
    out
}

fn evacuate_attr(cib: &Cib, node: &str) -> Option<String> {
    cib.nodes
        .iter()
        .find(|n| n.uname == node)
        .and_then(|n| {
            n.attrs
                .iter()
                .flat_map(|s| s.pairs.iter())
                .find(|(k, _)| k == EVACUATE_ATTR)
        })
        .map(|(_, v)| v.clone())
}

/// What to write into the live CIB for `request` at time `now`: the origin records the rules
/// propose, the evacuation attribute, and the pins added or removed. Empty when all is up to date.
pub fn sync(cib: &Cib, now: i64, request: &NodeRequest) -> Result<Vec<CibChange>, LifecycleError> {
    let mut next = cib.clone();
    next.locations.retain(|l| !l.id.starts_with(PIN_PREFIX));
    let known = |node: &str| -> Result<(String, String), LifecycleError> {
        cib.nodes
            .iter()
            .find(|n| n.uname == node)
            .map(|n| (n.id.clone(), n.uname.clone()))
            .ok_or_else(|| LifecycleError::UnknownNode {
                request: request.to_string(),
                node: node.to_string(),
            })
    };
    let mut node_attr = None;
    match request {
        NodeRequest::Evacuate(node) => {
            known(node)?;
            crate::events::set_node_attr(&mut next, node, EVACUATE_ATTR, Some("true"));
            node_attr = Some(node.clone());
        }
        NodeRequest::Restore(node) => {
            known(node)?;
            crate::events::set_node_attr(&mut next, node, EVACUATE_ATTR, None);
            node_attr = Some(node.clone());
        }
        NodeRequest::Shutdown(node) => {
            // Only in this copy: pacemakerd sets the real attribute when it is stopped.
            let (id, uname) = known(node)?;
            crate::simulate::node_state(&mut next, &id, &uname)
                .attrs
                .insert("shutdown".into(), now.to_string());
        }
        NodeRequest::Sync => {}
    }
    let obs = crate::observed::observe(&next, now);
    for u in updates(&next, &obs) {
        apply_update(&mut next, &u);
    }
    let mut out = Vec::new();
    let (before, after) = (record_attrs(cib), record_attrs(&next));
    let keys: std::collections::BTreeSet<&(String, String)> =
        before.keys().chain(after.keys()).collect();
    for k in keys {
        if before.get(k) != after.get(k) {
            out.push(CibChange::Meta {
                rsc: k.0.clone(),
                name: k.1.clone(),
                value: after.get(k).cloned(),
            });
        }
    }
    let obs = crate::observed::observe(&next, now);
    let wanted = pins(&next, &obs);
    let existing: Vec<&crate::cib::Location> = cib
        .locations
        .iter()
        .filter(|l| l.id.starts_with(PIN_PREFIX))
        .collect();
    let same = |l: &crate::cib::Location, p: &Pin| {
        l.id == p.id
            && l.rsc == p.rsc
            && l.node.as_deref() == Some(p.node.as_str())
            && l.rules.is_empty()
            && l.score.as_deref().and_then(crate::cib::parse_score) == Some(p.score)
    };
    for l in &existing {
        if !wanted.iter().any(|p| same(l, p)) {
            out.push(CibChange::RemovePin { id: l.id.clone() });
        }
    }
    for p in &wanted {
        if !existing.iter().any(|l| same(l, p)) {
            out.push(CibChange::AddPin(p.clone()));
        }
    }
    if let Some(node) = node_attr {
        let (was, now_attr) = (evacuate_attr(cib, &node), evacuate_attr(&next, &node));
        if was != now_attr {
            out.push(CibChange::NodeAttr {
                node,
                name: EVACUATE_ATTR.into(),
                value: now_attr,
            });
        }
    }
    Ok(out)
}
