//! What crm_simulate and the controller do to the CIB status: injected events (`-u -d -f -q -i`),
//! the fired actions recorded with the results their caller decides (expected, `-F` failures, or
//! the scenario runner's), and the resulting CIB as XML (`-O`).
//!
//! One recorder (`record_result`) writes every history entry, injected or executed, with
//! Pacemaker's entry ids: `<rsc>_last_0` for the last non-recurring result, `<rsc>_<task>_<ms>`
//! for a recurring one, `<rsc>_migrate_to_0`/`<rsc>_migrate_from_0` for migrations and
//! `<rsc>_last_failure_0` (plus `_last_0` when non-recurring) for a failure. Results expect rc 0
//! unless the action says otherwise, as crm_simulate's injections do. One writer
//! (`count_failure`) keeps the fail counts, as crm_simulate or the controller counts
//! ([`FailCounting`]).

use std::fmt::Write;

use crate::cib::{Cib, Element, INFINITY, LrmResource, NodeState, RscOp, parse_score};
use crate::graph::{EventKind, Fired, GraphAction, Outcome, TransitionGraph};
use crate::observed::Observed;

/// An operation result named as crm_simulate names it: `RSC_TASK_INTERVAL@NODE=RC`
/// (`vm1_monitor_10000@node1=7`, `vm1_migrate_to_0@node1=1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpSpec {
    /// The resource.
    pub rsc: String,
    /// The task (`monitor`, `start`, `migrate_to`, ...).
    pub task: String,
    /// The interval (0 for a one-off action).
    pub interval_ms: u64,
    /// The node.
    pub node: String,
    /// The result code (OCF exit code).
    pub rc: i32,
}

impl OpSpec {
    /// The operation key, `RSC_TASK_INTERVAL`.
    pub fn key(&self) -> String {
        format!("{}_{}_{}", self.rsc, self.task, self.interval_ms)
    }

    /// Whether this spec names that action (crm_simulate compares case-insensitively).
    pub fn matches(&self, rsc: &str, task: &str, interval_ms: u64, node: &str) -> bool {
        self.rsc.eq_ignore_ascii_case(rsc)
            && self.task.eq_ignore_ascii_case(task)
            && self.interval_ms == interval_ms
            && self.node.eq_ignore_ascii_case(node)
    }
}

/// One change made to the input before scheduling (crm_simulate's "Synthetic Cluster Events").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Injection {
    /// `-q/--quorum`: set the CIB's `have-quorum` (crm_simulate 2.1.5 applies it only together
    /// with another injection). The text is kept for the printed line.
    Quorum {
        /// Whether the cluster has quorum.
        quorum: bool,
        /// The value as given.
        text: String,
    },
    /// `-u/--node-up`: the node joins (online member).
    NodeUp(String),
    /// `-d/--node-down`: the node leaves cleanly; its history and attributes are erased.
    NodeDown(String),
    /// `-f/--node-fail`: the node is lost (not in the membership, history kept).
    NodeFail(String),
    /// `-g/-r/-b/-e` (`--ticket-grant`, `--ticket-revoke`, `--ticket-standby`,
    /// `--ticket-activate`): a ticket's state changed.
    Ticket {
        /// What happens to it.
        change: TicketChange,
        /// The ticket.
        ticket: String,
    },
    /// `-i/--op-inject`: an operation result recorded in the history.
    Op(OpSpec),
}

/// What a ticket injection does, in crm_simulate's order of application.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TicketChange {
    /// `granted="true"`.
    Grant,
    /// `granted="false"`.
    Revoke,
    /// `standby="true"`.
    Standby,
    /// `standby="false"`.
    Activate,
}

impl TicketChange {
    /// The ticket state attribute it sets, and its value.
    pub fn flag(self) -> (&'static str, bool) {
        match self {
            TicketChange::Grant => ("granted", true),
            TicketChange::Revoke => ("granted", false),
            TicketChange::Standby => ("standby", true),
            TicketChange::Activate => ("standby", false),
        }
    }

    /// The line crm_simulate prints for it.
    pub fn line(self, ticket: &str) -> String {
        match self {
            TicketChange::Grant => format!("Granting ticket {ticket}"),
            TicketChange::Revoke => format!("Revoking ticket {ticket}"),
            TicketChange::Standby => format!("Making ticket {ticket} standby"),
            TicketChange::Activate => format!("Activating ticket {ticket}"),
        }
    }

    /// The name used in the JSON summary.
    pub fn name(self) -> &'static str {
        match self {
            TicketChange::Grant => "ticket-grant",
            TicketChange::Revoke => "ticket-revoke",
            TicketChange::Standby => "ticket-standby",
            TicketChange::Activate => "ticket-activate",
        }
    }
}

/// Why an injection argument could not be read; each carries the offending text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InjectionError {
    /// Not of the form `RSC_TASK_INTERVAL@NODE=RC`.
    #[error("invalid operation spec '{spec}': expected RESOURCE_TASK_INTERVAL@NODE=RC")]
    Shape {
        /// The spec as given.
        spec: String,
    },
    /// The operation key is not `RSC_TASK_INTERVAL`.
    #[error("invalid operation key '{key}' in '{spec}': expected RESOURCE_TASK_INTERVAL")]
    OpKey {
        /// The spec as given.
        spec: String,
        /// The key in it.
        key: String,
    },
    /// The interval is not a number of milliseconds.
    #[error("invalid interval '{interval}' in '{spec}': milliseconds expected")]
    Interval {
        /// The spec as given.
        spec: String,
        /// The interval in it.
        interval: String,
    },
    /// The result code is not an integer.
    #[error("invalid result code '{rc}' in '{spec}': an integer expected")]
    Rc {
        /// The spec as given.
        spec: String,
        /// The result code in it.
        rc: String,
    },
    /// The node name is empty.
    #[error("empty node name in '{spec}'")]
    Node {
        /// The text as given.
        spec: String,
    },
    /// The quorum value is not a boolean.
    #[error("invalid quorum value '{value}': expected true/false (1/0)")]
    Quorum {
        /// The value as given.
        value: String,
    },
    /// The ticket name is empty.
    #[error("empty ticket name in '{spec}'")]
    Ticket {
        /// The text as given.
        spec: String,
    },
}

/// Splits an operation key `RSC_TASK_INTERVAL` as Pacemaker does: the interval after the last
/// underscore, the task before it (`migrate_to`, `migrate_from` and notify tasks keep their
/// underscores), the resource id (which may hold underscores) before that.
pub fn parse_op_key(key: &str) -> Option<(String, String, u64)> {
    let (head, interval) = key.rsplit_once('_')?;
    if interval.is_empty() || !interval.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let interval_ms: u64 = interval.parse().ok()?;
    let (mut rsc, mut task) = head.rsplit_once('_')?;
    let mut owned_task = task.to_string();
    if matches!(task, "to" | "from") {
        if let Some(r) = rsc.strip_suffix("_migrate") {
            owned_task = format!("migrate_{task}");
            rsc = r;
        }
    } else if let Some((r, kind)) = ["_pre_notify", "_post_notify"]
        .iter()
        .find_map(|s| rsc.strip_suffix(s).map(|r| (r, &s[1..])))
    {
        owned_task = format!("{kind}_{task}");
        rsc = r;
    }
    task = owned_task.as_str();
    if rsc.is_empty() || task.is_empty() {
        return None;
    }
    Some((rsc.to_string(), task.to_string(), interval_ms))
}

/// Parses `RSC_TASK_INTERVAL@NODE=RC` (the `-i` and `-F` argument).
pub fn parse_op_spec(text: &str) -> Result<OpSpec, InjectionError> {
    let shape = || InjectionError::Shape {
        spec: text.to_string(),
    };
    let (key, rest) = text.split_once('@').ok_or_else(shape)?;
    let (node, rc) = rest.split_once('=').ok_or_else(shape)?;
    if key.is_empty() {
        return Err(shape());
    }
    if node.is_empty() {
        return Err(InjectionError::Node {
            spec: text.to_string(),
        });
    }
    let rc: i32 = rc.trim().parse().map_err(|_| InjectionError::Rc {
        spec: text.to_string(),
        rc: rc.to_string(),
    })?;
    let (rsc, task, interval_ms) = parse_op_key(key).ok_or_else(|| match key.rsplit_once('_') {
        Some((_, iv))
            if !iv.is_empty()
                && iv.bytes().all(|b| b.is_ascii_digit())
                && iv.parse::<u64>().is_err() =>
        {
            InjectionError::Interval {
                spec: text.to_string(),
                interval: iv.to_string(),
            }
        }
        _ => InjectionError::OpKey {
            spec: text.to_string(),
            key: key.to_string(),
        },
    })?;
    Ok(OpSpec {
        rsc,
        task,
        interval_ms,
        node: node.to_string(),
        rc,
    })
}

/// Parses a node name argument (`-u`, `-d`, `-f`): any non-empty text.
pub fn parse_node(text: &str) -> Result<String, InjectionError> {
    if text.trim().is_empty() {
        return Err(InjectionError::Node {
            spec: text.to_string(),
        });
    }
    Ok(text.to_string())
}

/// Checks a ticket name given to `-g/-r/-b/-e`.
pub fn parse_ticket(text: &str) -> Result<String, InjectionError> {
    if text.trim().is_empty() {
        return Err(InjectionError::Ticket {
            spec: text.to_string(),
        });
    }
    Ok(text.to_string())
}

/// Parses the `-q/--quorum` value as crm_simulate reads it.
pub fn parse_quorum(text: &str) -> Result<Injection, InjectionError> {
    let quorum = match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" | "y" => true,
        "0" | "false" | "no" | "off" | "n" => false,
        _ => {
            return Err(InjectionError::Quorum {
                value: text.to_string(),
            });
        }
    };
    Ok(Injection::Quorum {
        quorum,
        text: text.to_string(),
    })
}

/// The CIB after the injections, the lines crm_simulate prints for them ("Performing Requested
/// Modifications"; empty when nothing was applied), and what it reports on stderr.
#[derive(Debug, Clone)]
pub struct Injected {
    pub cib: Cib,
    pub lines: String,
    pub errors: Vec<String>,
}

/// The node_state for a node name: by uname, else by the configured node's id, else a new one.
fn inject_node<'a>(cib: &'a mut Cib, uname: &str) -> &'a mut NodeState {
    let pos = cib
        .status
        .iter()
        .position(|s| s.uname == uname)
        .or_else(|| {
            let id = cib.nodes.iter().find(|n| n.uname == uname)?.id.clone();
            cib.status.iter().position(|s| s.id == id)
        });
    let pos = match pos {
        Some(p) => {
            cib.status[p].uname = uname.to_string();
            p
        }
        None => {
            let id = cib
                .nodes
                .iter()
                .find(|n| n.uname == uname)
                .map(|n| n.id.clone())
                .unwrap_or_else(|| uname.to_string());
            cib.status.push(NodeState {
                id,
                uname: uname.to_string(),
                ..Default::default()
            });
            cib.status.len() - 1
        }
    };
    &mut cib.status[pos]
}

fn set_membership(st: &mut NodeState, up: bool) {
    let (ccm, crmd, join) = if up {
        ("true", "online", "member")
    } else {
        ("false", "offline", "down")
    };
    st.in_ccm = Some(ccm.into());
    st.crmd = Some(crmd.into());
    st.join = Some(join.into());
    st.expected = Some(join.into());
}

/// How a failed result is counted in the node's fail counts (`fail-count-RSC#TASK_INTERVAL`,
/// with `last-failure-RSC#TASK_INTERVAL` set to the result's time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailCounting {
    /// crm_simulate's injection (`-i`, `-F`): one more, unless the result is a success (rc 0) or
    /// a probe's "not running" (rc 7).
    Simulator,
    /// The controller's: a failed stop makes the count INFINITY; a failed start too when
    /// `start-failure-is-fatal` (default true), else it adds one, as a failed recurring monitor,
    /// promote or demote does; other actions (probes, migrations, notifications) are not counted.
    Controller,
}

/// Counts a failed result of `rsc#task_interval` in a node's fail counts as `counting` says;
/// returns the new count, `None` when the failure is not counted.
fn count_failure(
    st: &mut NodeState,
    rsc: &str,
    op: &OpResult,
    counting: FailCounting,
    start_failure_is_fatal: bool,
) -> Option<i64> {
    let (task, interval_ms, rc) = (op.task, op.interval_ms, op.rc);
    let fatal = match counting {
        FailCounting::Simulator
            if rc == crate::cib::rc::OK
                || (rc == crate::cib::rc::NOT_RUNNING && interval_ms == 0) =>
        {
            return None;
        }
        FailCounting::Simulator => false,
        // Pacemaker 2.1.5's controller (daemons/controld/controld_te_events.c,
        // update_failcount(), with the graph's failed-stop-offset="INFINITY" and
        // failed-start-offset "INFINITY" or "1" from lib/pacemaker/pcmk_graph_producer.c): a failed
        // stop sets the count to INFINITY, whatever start-failure-is-fatal says; a failed start
        // sets INFINITY when start-failure-is-fatal, else adds one; a recurring operation,
        // promote or demote adds one; any other action of the transition (probe, migrate_to,
        // migrate_from, notify) writes neither the count nor the last-failure time.
        FailCounting::Controller => match task {
            "stop" => true,
            "start" => start_failure_is_fatal,
            "promote" | "demote" => false,
            _ if interval_ms > 0 => false,
            _ => return None,
        },
    };
    let count = format!("fail-count-{rsc}#{task}_{interval_ms}");
    let last = format!("last-failure-{rsc}#{task}_{interval_ms}");
    let prev = st
        .attrs
        .get(&count)
        .and_then(|v| parse_score(v))
        .unwrap_or(0);
    let new = if fatal {
        INFINITY
    } else {
        prev.saturating_add(1).min(INFINITY)
    };
    st.attrs.insert(count, score_text(new));
    st.attrs.insert(last, op.when.to_string());
    Some(new)
}

/// crm_simulate's fail count injection for a result (see [`FailCounting::Simulator`]); returns
/// the lines it prints.
fn inject_failcount(st: &mut NodeState, rsc: &str, op: &OpResult) -> String {
    if count_failure(st, rsc, op, FailCounting::Simulator, false).is_none() {
        return String::new();
    }
    let key = format!("{rsc}#{}_{}", op.task, op.interval_ms);
    format!(
        "  * Injecting attribute fail-count-{key}=value++ into /node_state '{}'\n  * Injecting attribute last-failure-{key}={} into /node_state '{}'\n",
        st.id, op.when, st.id
    )
}

/// A score as Pacemaker writes it (`INFINITY` at or above it).
pub fn score_text(v: i64) -> String {
    if v >= INFINITY {
        "INFINITY".into()
    } else {
        v.to_string()
    }
}

/// A resource's history on a node, created with its agent when missing (or when the node has
/// several entries of that id: crm_simulate's look-up finds none then, and adds another).
fn lrm_resource<'a>(
    st: &'a mut NodeState,
    id: &str,
    class: &str,
    provider: Option<&str>,
    kind: &str,
) -> &'a mut LrmResource {
    st.has_lrm = true;
    let found = st.lrm.iter().position(|l| l.id == id);
    let several = st.lrm.iter().filter(|l| l.id == id).count() > 1;
    let pos = match found.filter(|_| !several) {
        Some(p) => p,
        None => {
            st.lrm.push(LrmResource {
                id: id.to_string(),
                class: class.to_string(),
                provider: provider.map(str::to_string),
                kind: kind.to_string(),
                ops: Vec::new(),
                container: None,
                shutdown_lock: None,
            });
            st.lrm.len() - 1
        }
    };
    &mut st.lrm[pos]
}

/// One operation result to record in a resource's history.
#[derive(Debug, Clone)]
pub struct OpResult<'a> {
    pub task: &'a str,
    pub interval_ms: u64,
    pub rc: i32,
    /// The result the transition expected (kept in the transition key, as the controller does).
    pub target_rc: i32,
    /// The time written into the entry (and a fail count's last failure).
    pub when: i64,
    /// For migrate_to/migrate_from: (source, target) node names.
    pub migrate: Option<(String, String)>,
}

/// Records a result with Pacemaker's entry ids (see the module doc); an entry with the same id
/// is replaced in place. The call id is one more than any in the history. Injected results
/// carry no parameter digest (crm_simulate records none for them); executed ones ran with the
/// configured parameters.
fn record_result(lrm: &mut LrmResource, res: &OpResult, injected: bool) {
    let call_id = lrm.ops.iter().map(|o| o.call_id).max().unwrap_or(0).max(0) + 1;
    let rsc = lrm.id.clone();
    let failed = res.rc != res.target_rc;
    let mut ids = Vec::new();
    if failed {
        ids.push(format!("{rsc}_last_failure_0"));
        if res.interval_ms == 0 {
            ids.push(format!("{rsc}_last_0"));
        }
    } else if res.interval_ms > 0 {
        ids.push(format!("{rsc}_{}_{}", res.task, res.interval_ms));
    } else if res.task == "migrate_to" || res.task == "migrate_from" {
        ids.push(format!("{rsc}_{}_0", res.task));
    } else {
        ids.push(format!("{rsc}_last_0"));
    }
    let (source, target) = match &res.migrate {
        Some((s, t)) => (Some(s.clone()), Some(t.clone())),
        None => (None, None),
    };
    for id in ids {
        let op = RscOp {
            id: id.clone(),
            operation: res.task.to_string(),
            call_id,
            rc_code: res.rc,
            op_status: 0,
            interval_ms: res.interval_ms,
            transition_key: Some(format!(
                "{call_id}:-1:{}:xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx",
                res.target_rc
            )),
            last_rc_change: Some(res.when),
            migrate_source: source.clone(),
            migrate_target: target.clone(),
            exit_reason: None,
            element: if injected {
                Element {
                    name: "lrm_rsc_op".into(),
                    ..Default::default()
                }
            } else {
                Element::default()
            },
        };
        match lrm.ops.iter().position(|o| o.id == id) {
            // crm_simulate overwrites the entry's attributes: the ones it does not set (such
            // as the parameter digest of an injected result) stay.
            Some(p) => {
                let element = std::mem::take(&mut lrm.ops[p].element);
                lrm.ops[p] = RscOp {
                    element: if element.name.is_empty() {
                        op.element
                    } else {
                        element
                    },
                    ..op
                };
            }
            None => lrm.ops.push(op),
        }
    }
}

/// Applies injections as crm_simulate does (quorum, then nodes up, down and failed, then
/// operation results, each kind in the order given); `when` is the time written into injected
/// results and fail counts (crm_simulate uses the wall clock), `now` the time the CIB is read at.
pub fn inject(cib: &Cib, injections: &[Injection], when: i64, now: i64) -> Injected {
    // The resources an operation injection may name: those of the CIB as read before any
    // injection (crm_simulate looks them up in the working set it printed the status from).
    let before = injections
        .iter()
        .any(|i| matches!(i, Injection::Op(_)))
        .then(|| crate::observed::observe(cib, now));
    let mut next = cib.clone();
    let mut lines = String::new();
    let mut errors = Vec::new();
    if injections
        .iter()
        .all(|i| matches!(i, Injection::Quorum { .. }))
    {
        return Injected {
            cib: next,
            lines,
            errors,
        };
    }
    for inj in injections {
        if let Injection::Quorum { quorum, text } = inj {
            next.have_quorum = *quorum;
            let _ = writeln!(lines, "  * Setting quorum: {text}");
        }
    }
    let rank = |i: &Injection| match i {
        Injection::Quorum { .. } => 0,
        Injection::NodeUp(_) => 1,
        Injection::NodeDown(_) => 2,
        Injection::NodeFail(_) => 3,
        Injection::Ticket { change, .. } => 4 + *change as usize,
        Injection::Op(_) => 8,
    };
    let mut ordered: Vec<&Injection> = injections.iter().collect();
    ordered.sort_by_key(|i| rank(i));
    for inj in ordered {
        match inj {
            Injection::Quorum { .. } => {}
            Injection::NodeUp(n) => {
                let _ = writeln!(lines, "  * Bringing node {n} online");
                set_membership(inject_node(&mut next, n), true);
            }
            Injection::NodeDown(n) => {
                let _ = writeln!(lines, "  * Taking node {n} offline");
                let st = inject_node(&mut next, n);
                set_membership(st, false);
                st.lrm.clear();
                st.has_lrm = false;
                st.attrs.clear();
            }
            Injection::NodeFail(n) => {
                let _ = writeln!(lines, "  * Failing node {n}");
                let st = inject_node(&mut next, n);
                set_membership(st, true);
                st.in_ccm = Some("false".into());
            }
            Injection::Ticket { change, ticket } => {
                let _ = writeln!(lines, "  * {}", change.line(ticket));
                let (name, value) = change.flag();
                crate::cib::set_ticket_flag(&mut next.tickets, ticket, name, value);
            }
            Injection::Op(spec) => {
                let _ = writeln!(
                    lines,
                    "  * Injecting {}@{}={} into the configuration",
                    spec.key(),
                    spec.node,
                    spec.rc
                );
                let Some((class, provider, kind)) = before
                    .as_ref()
                    .and_then(|obs| injected_agent(obs, &spec.rsc))
                else {
                    errors.push(format!("Invalid resource name: {}", spec.rsc));
                    continue;
                };
                let st = inject_node(&mut next, &spec.node);
                let op = OpResult {
                    task: &spec.task,
                    interval_ms: spec.interval_ms,
                    rc: spec.rc,
                    target_rc: crate::cib::rc::OK,
                    when,
                    migrate: None,
                };
                lines.push_str(&inject_failcount(st, &spec.rsc, &op));
                let lrm = lrm_resource(st, &spec.rsc, &class, provider.as_deref(), &kind);
                record_result(lrm, &op, true);
            }
        }
    }
    Injected {
        cib: next,
        lines,
        errors,
    }
}

/// Class, provider and type of the resource an operation injection names, found as Pacemaker's
/// `pe_find_resource` finds it (with `pe_find_renamed`): a primitive, clone instance (`rsc:N`),
/// orphan or implicit resource by its id, or an anonymous instance by the history name it was
/// mapped from (`clone_name`). A cloned primitive's bare id names nothing else.
fn injected_agent(obs: &Observed, id: &str) -> Option<(String, Option<String>, String)> {
    obs.resources
        .iter()
        .find(|r| r.id == id || r.clone_name.as_deref() == Some(id))
        .map(|r| (r.class.clone(), r.provider.clone(), r.kind.clone()))
}

/// Fires the transition (`graph::fire`) with the results `outcome_of` gives and records them
/// (`apply`): the first unexpected result aborts the rest, as the controller does. Returns the
/// resulting CIB and the fired actions with their outcomes, in firing order.
pub fn apply_with(
    cib: &Cib,
    obs: &Observed,
    g: &TransitionGraph,
    record: Recording,
    mut outcome_of: impl FnMut(&GraphAction) -> Outcome,
) -> (Cib, Vec<Fired>) {
    let fired = crate::graph::fire(g, &mut outcome_of);
    (apply(cib, obs, g, &fired, record), fired)
}

/// How fired actions are recorded: the time written into the new entries and fail counts, and
/// who counts the failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recording {
    pub when: i64,
    pub counting: FailCounting,
}

/// Returns the CIB after the fired actions returned their outcomes: each result recorded
/// (`record_op`), a failure counted as `record.counting` says, a fenced node cleared; pending
/// actions and failed fencing change nothing.
pub fn apply(
    cib: &Cib,
    obs: &Observed,
    g: &TransitionGraph,
    fired: &[Fired],
    record: Recording,
) -> Cib {
    let mut next = cib.clone();
    for f in fired {
        let ga = &g.actions[f.action];
        let rc = match f.outcome {
            Outcome::Pending => continue,
            Outcome::Rc(rc) | Outcome::Failed(rc) => rc,
        };
        let failed = f.failed_rc(g).is_some();
        match ga.event {
            EventKind::Fence => {
                let Some(ni) = ga.node else { continue };
                if failed {
                    continue;
                }
                let n = &obs.nodes[ni];
                let st = node_state(&mut next, &n.id, &n.uname);
                set_membership(st, false);
                st.lrm.clear();
                st.attrs.clear();
            }
            // crm_simulate records nothing for an unfencing; the controller records that the
            // node was unfenced, and with which device digests.
            EventKind::Unfence => {
                let Some(ni) = ga.node else { continue };
                if failed || record.counting != FailCounting::Controller {
                    continue;
                }
                let n = &obs.nodes[ni];
                let digests = crate::unfencing::fencing_digests(obs, ni);
                let st = node_state(&mut next, &n.id, &n.uname);
                st.attrs
                    .insert("#node-unfenced".into(), record.when.to_string());
                if let Some((all, secure)) = digests {
                    st.attrs.insert("#digests-all".into(), all);
                    st.attrs.insert("#digests-secure".into(), secure);
                }
            }
            // Notifications leave no history.
            EventKind::RscOp if ga.task == "notify" => {}
            EventKind::RscOp => {
                let (Some(ri), Some(ni)) = (ga.rsc, ga.node) else {
                    continue;
                };
                let migrate = ga
                    .migrate
                    .map(|(s, t)| (obs.nodes[s].uname.clone(), obs.nodes[t].uname.clone()));
                let op = OpResult {
                    task: &ga.task,
                    interval_ms: ga.interval_ms,
                    rc,
                    target_rc: ga.expected_rc,
                    when: record.when,
                    migrate,
                };
                record_op(
                    &mut next,
                    obs,
                    (ri, ni),
                    &op,
                    failed.then_some(record.counting),
                );
            }
            // crm_simulate does not change the node for cluster actions (do_shutdown).
            EventKind::Cluster => {}
            EventKind::Pseudo | EventKind::GuestFence { .. } => {}
        }
    }
    next
}

/// Records an executed operation of resource `ri` on node `ni` (indices into `obs`): a cancel
/// removes the recurring monitor's entry (not its last failure); a stop that did not fail drops the recurring entries; the
/// result goes through `record_result`. `failure`: the result is a failure, counted in the
/// node's fail counts as it says. Returns the fail count after it (`None`: not counted).
pub fn record_op(
    cib: &mut Cib,
    obs: &Observed,
    (ri, ni): (usize, usize),
    op: &OpResult,
    failure: Option<FailCounting>,
) -> Option<i64> {
    let r = &obs.resources[ri];
    let n = &obs.nodes[ni];
    let st = node_state(cib, &n.id, &n.uname);
    // An anonymous clone instance's history: the entry crm_simulate finds by the name it
    // prints, else the primitive's (see `clones::simulated_name`).
    let simulated = crate::clones::simulated_name(obs, ri);
    let name = if st.lrm.iter().any(|l| l.id == simulated) {
        simulated
    } else {
        r.history_id()
    };
    let count = failure.and_then(|c| count_failure(st, name, op, c, obs.start_failure_is_fatal));
    // A clean-up is only shown: crm_simulate records no history for it (the history stays).
    if op.task == "delete" {
        return count;
    }
    let lrm = lrm_resource(st, name, &r.class, r.provider.as_deref(), &r.kind);
    // The cancelled operation's own entry goes; a failure it recorded stays (the controller
    // deletes the entry by the operation's key, so `last_failure` keeps the failure shown).
    if op.task == "cancel" {
        let last_failure = format!("{}_last_failure_0", name);
        lrm.ops.retain(|o| {
            !(o.operation == "monitor" && o.interval_ms == op.interval_ms && o.id != last_failure)
        });
        return count;
    }
    // A stop drops the recurring operations' entries; a failure they recorded stays.
    if op.task == "stop" && failure.is_none() {
        let last_failure = format!("{}_last_failure_0", r.id);
        lrm.ops
            .retain(|o| o.interval_ms == 0 || o.id == last_failure);
    }
    record_result(lrm, op, false);
    count
}

/// The lines crm_simulate prints after a `-F` failure: the fail count it injects.
pub fn failure_lines(obs: &Observed, g: &TransitionGraph, f: &Fired, when: i64) -> String {
    let ga = &g.actions[f.action];
    let (Some(rc), Some(ri), Some(ni)) = (f.failed_rc(g), ga.rsc, ga.node) else {
        return String::new();
    };
    let mut st = NodeState {
        id: obs.nodes[ni].id.clone(),
        ..Default::default()
    };
    let op = OpResult {
        task: &ga.task,
        interval_ms: ga.interval_ms,
        rc,
        target_rc: ga.expected_rc,
        when,
        migrate: None,
    };
    inject_failcount(&mut st, obs.resources[ri].history_id(), &op)
}

pub(crate) fn node_state<'a>(cib: &'a mut Cib, id: &str, uname: &str) -> &'a mut NodeState {
    let pos = cib
        .status
        .iter()
        .position(|s| s.id == id || s.uname == uname);
    let pos = match pos {
        Some(p) => p,
        None => {
            cib.status.push(NodeState {
                id: id.to_string(),
                uname: uname.to_string(),
                in_ccm: Some("true".into()),
                crmd: Some("online".into()),
                join: Some("member".into()),
                expected: Some("member".into()),
                has_lrm: true,
                ..Default::default()
            });
            cib.status.len() - 1
        }
    };
    &mut cib.status[pos]
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\n' => out.push_str("&#10;"),
            _ => out.push(c),
        }
    }
    out
}

fn write_element(out: &mut String, el: &Element, depth: usize) {
    let pad = "  ".repeat(depth);
    let _ = write!(out, "{pad}<{}", el.name);
    for (k, v) in &el.attrs {
        let _ = write!(out, " {k}=\"{}\"", escape(v));
    }
    if el.children.is_empty() {
        out.push_str("/>\n");
        return;
    }
    out.push_str(">\n");
    for c in &el.children {
        write_element(out, c, depth + 1);
    }
    let _ = writeln!(out, "{pad}</{}>", el.name);
}

fn attr_el(name: &str, attrs: &[(&str, Option<String>)]) -> Element {
    Element {
        name: name.to_string(),
        attrs: attrs
            .iter()
            .filter_map(|(k, v)| v.clone().map(|v| (k.to_string(), v)))
            .collect(),
        children: Vec::new(),
        line: 0,
    }
}

fn op_element(op: &RscOp) -> Element {
    // Entries read from the input keep their attributes; the typed fields win.
    let mut el = if op.element.name == "lrm_rsc_op" {
        op.element.clone()
    } else {
        attr_el("lrm_rsc_op", &[])
    };
    el.children.clear();
    let key = format!("{}_{}_{}", op_rsc(op), op.operation, op.interval_ms);
    el.set_attr("id", &op.id);
    el.set_attr("operation_key", &key);
    el.set_attr("operation", &op.operation);
    if let Some(k) = &op.transition_key {
        el.set_attr("transition-key", k);
        el.set_attr(
            "transition-magic",
            &format!("{}:{};{k}", op.op_status, op.rc_code),
        );
    }
    el.set_attr("call-id", &op.call_id.to_string());
    el.set_attr("rc-code", &op.rc_code.to_string());
    el.set_attr("op-status", &op.op_status.to_string());
    el.set_attr("interval", &op.interval_ms.to_string());
    if let Some(t) = op.last_rc_change {
        el.set_attr("last-rc-change", &t.to_string());
    }
    if let Some(s) = &op.migrate_source {
        el.set_attr("migrate_source", s);
    }
    if let Some(t) = &op.migrate_target {
        el.set_attr("migrate_target", t);
    }
    if let Some(r) = &op.exit_reason {
        el.set_attr("exit-reason", r);
    }
    el
}

/// The resource id an entry id starts with (for the operation key of new entries).
fn op_rsc(op: &RscOp) -> &str {
    for suffix in ["_last_failure_0", "_last_0"] {
        if let Some(r) = op.id.strip_suffix(suffix) {
            return r;
        }
    }
    let tail = format!("_{}_{}", op.operation, op.interval_ms);
    op.id.strip_suffix(tail.as_str()).unwrap_or(&op.id)
}

/// The status section of `cib` as XML elements.
fn status_element(cib: &Cib) -> Element {
    let mut status = attr_el("status", &[]);
    if !cib.tickets.is_empty() {
        let mut tickets = attr_el("tickets", &[]);
        for t in &cib.tickets {
            let mut el = attr_el("ticket_state", &[("id", Some(t.id.clone()))]);
            el.attrs.extend(t.attrs.iter().cloned());
            tickets.children.push(el);
        }
        status.children.push(tickets);
    }
    for st in &cib.status {
        let mut ns = attr_el(
            "node_state",
            &[
                ("id", Some(st.id.clone())),
                ("uname", Some(st.uname.clone())),
                ("in_ccm", st.in_ccm.clone()),
                ("crmd", st.crmd.clone()),
                ("join", st.join.clone()),
                ("expected", st.expected.clone()),
            ],
        );
        if !st.attrs.is_empty() {
            let mut ta = attr_el("transient_attributes", &[("id", Some(st.id.clone()))]);
            let mut ia = attr_el(
                "instance_attributes",
                &[("id", Some(format!("status-{}", st.id)))],
            );
            for (k, v) in &st.attrs {
                ia.children.push(attr_el(
                    "nvpair",
                    &[
                        (
                            "id",
                            Some(format!("status-{}-{k}", st.id).replace('#', ".")),
                        ),
                        ("name", Some(k.clone())),
                        ("value", Some(v.clone())),
                    ],
                ));
            }
            ta.children.push(ia);
            ns.children.push(ta);
        }
        if st.has_lrm || !st.lrm.is_empty() {
            let mut lrm = attr_el("lrm", &[("id", Some(st.id.clone()))]);
            let mut lrs = attr_el("lrm_resources", &[]);
            for lr in &st.lrm {
                let mut el = attr_el(
                    "lrm_resource",
                    &[
                        ("id", Some(lr.id.clone())),
                        ("class", Some(lr.class.clone())),
                        ("provider", lr.provider.clone()),
                        ("type", Some(lr.kind.clone())),
                        ("container", lr.container.clone()),
                        ("shutdown-lock", lr.shutdown_lock.map(|t| t.to_string())),
                    ],
                );
                el.children.extend(lr.ops.iter().map(op_element));
                lrs.children.push(el);
            }
            lrm.children.push(lrs);
            ns.children.push(lrm);
        }
        status.children.push(ns);
    }
    status
}

/// Renders a CIB as XML (`-O`): the input document's root and configuration as read, with the
/// quorum and the whole status section taken from `cib`.
pub fn render_cib_xml(input: &Element, cib: &Cib) -> String {
    let mut root = input.clone();
    root.set_attr("have-quorum", if cib.have_quorum { "1" } else { "0" });
    root.children.retain(|c| c.name != "status");
    root.children.push(status_element(cib));
    let mut out = String::new();
    write_element(&mut out, &root, 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two online nodes, one resource with a 10 s monitor, no history: the plan probes both
    /// nodes, starts vm on n1 (location preference) and then monitors it.
    const FRESH: &str = r#"<cib have-quorum="1"><configuration><crm_config><cluster_property_set id="o"><nvpair id="o1" name="stonith-enabled" value="false"/></cluster_property_set></crm_config><nodes><node id="1" uname="n1"/><node id="2" uname="n2"/></nodes><resources><primitive id="vm" class="ocf" provider="pacemaker" type="Dummy"><operations><op id="vm-mon" name="monitor" interval="10s"/></operations></primitive></resources><constraints><rsc_location id="l" rsc="vm" node="n1" score="100"/></constraints></configuration><status><node_state id="1" uname="n1" in_ccm="true" crmd="online" join="member" expected="member"/><node_state id="2" uname="n2" in_ccm="true" crmd="online" join="member" expected="member"/></status></cib>"#;

    fn attr<'a>(cib: &'a Cib, node: &str, name: &str) -> Option<&'a str> {
        let st = cib.status.iter().find(|s| s.uname == node)?;
        st.attrs.get(name).map(String::as_str)
    }

    fn ops<'a>(cib: &'a Cib, node: &str, rsc: &str) -> Vec<(&'a str, &'a str, i32)> {
        cib.status
            .iter()
            .filter(|s| s.uname == node)
            .flat_map(|s| s.lrm.iter().filter(|l| l.id == rsc))
            .flat_map(|l| l.ops.iter())
            .map(|o| (o.id.as_str(), o.operation.as_str(), o.rc_code))
            .collect()
    }

    /// Runs FRESH's transition with the start on n1 returning `start`; returns the CIB and the
    /// tasks the outcome closure was asked about, in order.
    fn run_fresh(start: Outcome, counting: FailCounting) -> (Cib, Vec<String>) {
        let cib = crate::parse_cib(FRESH).expect("valid CIB");
        let t = crate::schedule(&cib, 1000);
        let mut asked = Vec::new();
        let record = Recording {
            when: 1000,
            counting,
        };
        let (next, _) = apply_with(&cib, &t.observed, &t.graph, record, |ga| {
            asked.push(format!("{}/{}", ga.task, ga.interval_ms));
            if ga.task == "start" {
                start
            } else {
                Outcome::Rc(ga.expected_rc)
            }
        });
        (next, asked)
    }

    #[test]
    fn ticket_injections_apply_in_crm_simulates_order_and_create_missing_states() {
        let cib = crate::parse_cib(FRESH).expect("valid CIB");
        let t = |change, ticket: &str| Injection::Ticket {
            change,
            ticket: ticket.into(),
        };
        // Given activate, standby, revoke, grant: crm_simulate grants, revokes, puts in
        // standby, then activates, whatever the order of the arguments.
        let injected = inject(
            &cib,
            &[
                t(TicketChange::Activate, "A"),
                t(TicketChange::Standby, "A"),
                t(TicketChange::Revoke, "B"),
                t(TicketChange::Grant, "A"),
            ],
            1000,
            1000,
        );
        assert_eq!(
            injected.lines,
            "  * Granting ticket A\n  * Revoking ticket B\n  * Making ticket A standby\n  * Activating ticket A\n"
        );
        let states: Vec<(&str, Vec<(&str, &str)>)> = injected
            .cib
            .tickets
            .iter()
            .map(|s| {
                let attrs = s.attrs.iter().map(|(k, v)| (k.as_str(), v.as_str()));
                (s.id.as_str(), attrs.collect())
            })
            .collect();
        assert_eq!(
            states,
            [
                ("A", vec![("granted", "true"), ("standby", "false")]),
                ("B", vec![("granted", "false")]),
            ]
        );
        assert!(injected.cib.tickets[0].granted && !injected.cib.tickets[0].standby);
        assert!(!injected.cib.tickets[1].granted);
        assert!(parse_ticket(" ").is_err());
    }

    #[test]
    fn expected_results_are_recorded_with_pacemakers_ids() {
        let (cib, asked) = run_fresh(Outcome::Rc(0), FailCounting::Controller);
        assert_eq!(
            asked,
            ["monitor/0", "monitor/0", "start/0", "monitor/10000"],
            "probes, start, monitor"
        );
        assert_eq!(
            ops(&cib, "n1", "vm"),
            [
                ("vm_last_0", "start", 0),
                ("vm_monitor_10000", "monitor", 0)
            ]
        );
        assert_eq!(ops(&cib, "n2", "vm"), [("vm_last_0", "monitor", 7)]);
        assert_eq!(attr(&cib, "n1", "fail-count-vm#start_0"), None);
    }

    #[test]
    fn a_failed_start_aborts_and_is_counted_once_as_its_caller_counts() {
        // The controller (start-failure-is-fatal defaults to true): INFINITY.
        let (cib, asked) = run_fresh(Outcome::Rc(1), FailCounting::Controller);
        assert_eq!(
            asked.last().map(String::as_str),
            Some("start/0"),
            "{asked:?}"
        );
        assert_eq!(attr(&cib, "n1", "fail-count-vm#start_0"), Some("INFINITY"));
        assert_eq!(attr(&cib, "n1", "last-failure-vm#start_0"), Some("1000"));
        assert_eq!(
            ops(&cib, "n1", "vm"),
            [("vm_last_0", "start", 1), ("vm_last_failure_0", "start", 1)],
            "the probe's _last_0 replaced by the failed start, no monitor"
        );
        // crm_simulate's -F: one more.
        let (cib, _) = run_fresh(Outcome::Failed(1), FailCounting::Simulator);
        assert_eq!(attr(&cib, "n1", "fail-count-vm#start_0"), Some("1"));
        // -F with the expected rc: flagged failed (aborts), recorded as a success, not counted.
        let (cib, asked) = run_fresh(Outcome::Failed(0), FailCounting::Simulator);
        assert_eq!(
            asked.last().map(String::as_str),
            Some("start/0"),
            "{asked:?}"
        );
        assert_eq!(attr(&cib, "n1", "fail-count-vm#start_0"), None);
        assert_eq!(ops(&cib, "n1", "vm"), [("vm_last_0", "start", 0)]);
    }

    #[test]
    fn a_pending_action_records_nothing_and_stops_the_transition() {
        let (cib, asked) = run_fresh(Outcome::Pending, FailCounting::Controller);
        assert_eq!(
            asked.last().map(String::as_str),
            Some("start/0"),
            "{asked:?}"
        );
        assert_eq!(ops(&cib, "n1", "vm"), [("vm_last_0", "monitor", 7)]);
        assert_eq!(attr(&cib, "n1", "fail-count-vm#start_0"), None);
    }

    #[test]
    fn a_monitor_failure_event_is_recorded_and_counted_once() {
        let (mut cib, _) = run_fresh(Outcome::Rc(0), FailCounting::Controller);
        let fail = crate::events::parse_event(1, "fail vm n1 monitor")
            .expect("parses")
            .expect("an event");
        let log = crate::events::apply_event(&mut cib, &fail, 2000).expect("applies");
        assert_eq!(log, ["vm monitor on n1 reports not running (fail-count 1)"]);
        assert_eq!(attr(&cib, "n1", "fail-count-vm#monitor_10000"), Some("1"));
        assert_eq!(
            ops(&cib, "n1", "vm"),
            [
                ("vm_last_0", "start", 0),
                ("vm_monitor_10000", "monitor", 0),
                ("vm_last_failure_0", "monitor", 7)
            ]
        );
    }

    #[test]
    fn op_specs_parse_as_crm_simulate_reads_them() {
        let s = parse_op_spec("vm1_monitor_10000@node1=7").expect("valid");
        assert_eq!(
            (
                s.rsc.as_str(),
                s.task.as_str(),
                s.interval_ms,
                s.node.as_str(),
                s.rc
            ),
            ("vm1", "monitor", 10_000, "node1", 7)
        );
        let s = parse_op_spec("my_vm_migrate_to_0@n-2=1").expect("valid");
        assert_eq!((s.rsc.as_str(), s.task.as_str()), ("my_vm", "migrate_to"));
        let s = parse_op_spec("vm_migrate_from_0@n=0").expect("valid");
        assert_eq!((s.rsc.as_str(), s.task.as_str()), ("vm", "migrate_from"));
        let s = parse_op_spec("db:0_stop_0@fred.example.com=-1").expect("valid");
        assert_eq!(
            (s.rsc.as_str(), s.node.as_str(), s.rc),
            ("db:0", "fred.example.com", -1)
        );
        let s = parse_op_spec("c_pre_notify_start_0@n=0").expect("valid");
        assert_eq!((s.rsc.as_str(), s.task.as_str()), ("c", "pre_notify_start"));
    }

    #[test]
    fn bad_op_specs_name_the_offending_text() {
        for (text, want) in [
            ("bad", InjectionError::Shape { spec: "bad".into() }),
            (
                "x@y=z",
                InjectionError::Rc {
                    spec: "x@y=z".into(),
                    rc: "z".into(),
                },
            ),
            (
                "vm_start@n=1",
                InjectionError::OpKey {
                    spec: "vm_start@n=1".into(),
                    key: "vm_start".into(),
                },
            ),
            (
                "vm_start_0@=1",
                InjectionError::Node {
                    spec: "vm_start_0@=1".into(),
                },
            ),
            (
                "vm_start_99999999999999999999@n=1",
                InjectionError::Interval {
                    spec: "vm_start_99999999999999999999@n=1".into(),
                    interval: "99999999999999999999".into(),
                },
            ),
            (
                "_start_0@n=1",
                InjectionError::OpKey {
                    spec: "_start_0@n=1".into(),
                    key: "_start_0".into(),
                },
            ),
        ] {
            assert_eq!(parse_op_spec(text), Err(want), "{text}");
        }
        assert!(parse_op_spec("vm_start_0@n=1").is_ok());
    }
}
