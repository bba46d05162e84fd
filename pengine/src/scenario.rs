//! The scenario runner: applies a command list's events to a CIB over virtual time and, after each,
//! plans and executes transitions (through `simulate`) until the plan is empty, logging every
//! planned action and every state change. It plays the controller, the executor and the fencer:
//! it knows where each resource really runs, fails the starts a scenario armed, counts failures,
//! and fences with a watchdog only once `stonith-watchdog-timeout` has passed since the loss.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::cib::{Cib, INFINITY, is_true, parse_interval_ms};
use crate::events::{self, Event, EventError, FailOp};
use crate::graph::{EventKind, Fired, GraphAction, Outcome, TransitionGraph};
use crate::observed::{Observed, Role};
use crate::simulate::{FailCounting, Recording};

/// Transitions run after one event before the runner gives up (a plan that never empties).
pub const TRANSITIONS_MAX: usize = 25;

/// The simulated world: the CIB plus what only the nodes know.
#[derive(Debug, Clone)]
pub struct World {
    pub cib: Cib,
    /// Seconds since the epoch.
    pub now: i64,
    /// Seconds since the epoch when the scenario started (log times are relative to it).
    pub start: i64,
    /// Where each resource really runs (resource -> nodes).
    truth: BTreeMap<String, BTreeSet<String>>,
    /// Armed failures: (task, resource, node) -> remaining count (`None`: until repaired).
    faults: BTreeMap<(String, String, String), Option<u32>>,
    /// Armed fencing failures: node -> remaining count (`None`: every attempt).
    fence_faults: BTreeMap<String, Option<u32>>,
    /// Failed fencing attempts per node, as the controller counts them for `stonith-max-attempts`.
    fence_failures: BTreeMap<String, u32>,
    /// When each lost node left the membership (for watchdog self-fencing).
    lost_at: BTreeMap<String, i64>,
    transitions: usize,
    log: Vec<String>,
    /// Resources currently reported as running on more than one node.
    doubles: BTreeSet<String>,
}

impl World {
    /// A world from a CIB at time `now`: resources really run where the CIB says they do.
    pub fn new(cib: Cib, now: i64) -> World {
        let obs = crate::observed::observe(&cib, now);
        let mut truth: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for r in &obs.resources {
            if r.role > Role::Stopped && !r.failed {
                for &ni in &r.running_on {
                    truth
                        .entry(r.id.clone())
                        .or_default()
                        .insert(obs.nodes[ni].uname.clone());
                }
            }
        }
        World {
            cib,
            now,
            start: now,
            truth,
            faults: BTreeMap::new(),
            fence_faults: BTreeMap::new(),
            fence_failures: BTreeMap::new(),
            lost_at: BTreeMap::new(),
            transitions: 0,
            log: Vec::new(),
            doubles: BTreeSet::new(),
        }
    }

    /// The log so far, one line per entry.
    pub fn log(&self) -> String {
        let mut s = String::new();
        for l in &self.log {
            s.push_str(l);
            s.push('\n');
        }
        s
    }

    fn say(&mut self, line: String) {
        let t = self.now - self.start;
        self.log.push(format!("{t:>6}s  {line}"));
    }

    fn runs(&self, rsc: &str, node: &str) -> bool {
        self.truth.get(rsc).is_some_and(|s| s.contains(node))
    }

    /// Applies one event, then settles: plans and executes until nothing is left to do.
    pub fn step(&mut self, event: &Event) -> Result<(), EventError> {
        self.say(format!("> {event}"));
        let before = snapshot(&self.cib, self.now);
        match event {
            Event::Advance { seconds } => self.now = self.now.saturating_add(*seconds),
            Event::Fail { rsc, node, op } if op.armed().is_some() => {
                if let Some((task, count)) = op.armed() {
                    self.faults
                        .insert((task.to_string(), rsc.clone(), node.clone()), count);
                }
            }
            Event::Repair { rsc, node } => {
                self.faults.retain(|(_, r, n), _| !(r == rsc && n == node));
            }
            Event::FailFence { node, count } => {
                self.fence_faults.insert(node.clone(), *count);
            }
            Event::Fail {
                rsc,
                node,
                op: FailOp::Monitor,
            } => {
                if !self.runs(rsc, node) {
                    return Err(EventError::NotRunning {
                        event: event.to_string(),
                        rsc: rsc.clone(),
                        node: node.clone(),
                    });
                }
                if let Some(s) = self.truth.get_mut(rsc) {
                    s.remove(node);
                }
            }
            Event::Crash { node } => {
                // The worst case: cut off, not dead. What ran there keeps running until the node
                // is fenced (or resets itself by watchdog), so a premature start elsewhere shows
                // up as two copies.
                self.lost_at.insert(node.clone(), self.now);
            }
            Event::Fence { node } | Event::Join { node } => {
                self.fence_failures.remove(node);
                self.lost_at.remove(node);
                self.forget_node(node);
            }
            _ => {}
        }
        let lines = events::apply_event(&mut self.cib, event, self.now)?;
        for l in lines {
            self.say(l);
        }
        let after = snapshot(&self.cib, self.now);
        self.log_diff(&before, &after);
        self.check_copies();
        self.settle();
        Ok(())
    }

    /// Logs every resource that starts (or stops) running on more than one node: the invariant
    /// the lifecycle rules exist for. The runner's truth, not the CIB: a lost node's copy counts.
    fn check_copies(&mut self) {
        let now: BTreeMap<String, Vec<String>> = self
            .truth
            .iter()
            .filter(|(_, nodes)| nodes.len() > 1)
            .map(|(r, nodes)| (r.clone(), nodes.iter().cloned().collect()))
            .collect();
        for (r, nodes) in &now {
            if self.doubles.insert(r.clone()) {
                self.say(format!("  TWO COPIES of {r}: {}", nodes.join(" ")));
            }
        }
        let gone: Vec<String> = self
            .doubles
            .iter()
            .filter(|r| !now.contains_key(*r))
            .cloned()
            .collect();
        for r in gone {
            self.doubles.remove(&r);
            self.say(format!("  one copy of {r} again"));
        }
    }

    /// Everything that ran on a node is gone (it crashed, was fenced, or rebooted).
    fn forget_node(&mut self, node: &str) {
        for s in self.truth.values_mut() {
            s.remove(node);
        }
    }

    fn log_diff(&mut self, before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) {
        let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
        for k in keys {
            match (before.get(k), after.get(k)) {
                (Some(a), Some(b)) if a == b => {}
                (Some(a), Some(b)) => self.say(format!("  {k}: {a} -> {b}")),
                (None, Some(b)) => self.say(format!("  {k}: {b}")),
                (Some(a), None) => self.say(format!("  {k}: {a} -> (none)")),
                (None, None) => {}
            }
        }
    }

    /// Plans and executes transitions until the plan is empty, a fence waits, or the bound is hit.
    pub fn settle(&mut self) {
        for _ in 0..TRANSITIONS_MAX {
            let t = crate::schedule(&self.cib, self.now);
            let fired = crate::graph::firing_order(&t.graph);
            let work: Vec<usize> = fired
                .iter()
                .copied()
                .filter(|&a| !t.graph.actions[a].event.is_pseudo())
                .collect();
            let updates = crate::lifecycle::updates(&self.cib, &t.observed);
            if work.is_empty() && updates.is_empty() {
                return;
            }
            self.transitions += 1;
            let tn = self.transitions;
            let summary =
                crate::graph::render_summary(&t.observed, &t.plan, &t.reconciliation, &t.graph);
            for l in summary.lines() {
                let l = l.trim().trim_start_matches("* ").trim();
                self.say(format!("T{tn} plan: {}", squeeze(l)));
            }
            let before = snapshot(&self.cib, self.now);
            let cib = self.cib.clone();
            // The controller's recording: the shared recorder writes the history and counts
            // failures (start-failure-is-fatal included).
            let record = Recording {
                when: self.now,
                counting: FailCounting::Controller,
            };
            let (next, executed) =
                crate::simulate::apply_with(&cib, &t.observed, &t.graph, record, |ga| {
                    self.outcome(&t.observed, ga)
                });
            self.cib = next;
            let ran = self.account(&t.observed, &t.graph, &executed);
            if !ran.is_empty() {
                self.say(format!("T{tn} ran: {}", ran.join(" ")));
            }
            for u in &updates {
                self.say(format!("T{tn} record: {u}"));
                crate::lifecycle::apply_update(&mut self.cib, u);
            }
            let after = snapshot(&self.cib, self.now);
            self.log_diff(&before, &after);
            self.check_copies();
            if executed.iter().any(|e| e.outcome == Outcome::Pending) {
                return;
            }
        }
        self.say(format!(
            "did not settle after {TRANSITIONS_MAX} transitions: stopping here"
        ));
    }

    /// What executing one action returns, and the world's change when it succeeds.
    fn outcome(&mut self, obs: &Observed, ga: &GraphAction) -> Outcome {
        let node = ga
            .node
            .map(|n| obs.nodes[n].uname.clone())
            .unwrap_or_default();
        if ga.event == EventKind::Fence {
            if let Some(until) = self.watchdog_wait_until(obs, &node) {
                if self.now < until {
                    return Outcome::Pending;
                }
            }
            // The controller gives up on a node after `stonith-max-attempts` failures: the
            // action is not run again (its resources stay blocked).
            if self.fence_failures.get(&node).copied().unwrap_or(0) >= fence_attempts_max(obs) {
                return Outcome::Pending;
            }
            if take_fault(&mut self.fence_faults, node.clone()) {
                *self.fence_failures.entry(node).or_insert(0) += 1;
                return Outcome::Rc(1);
            }
            self.fence_failures.remove(&node);
            self.lost_at.remove(&node);
            self.forget_node(&node);
            return Outcome::Rc(0);
        }
        let Some(ri) = ga.rsc else {
            return Outcome::Rc(ga.expected_rc);
        };
        let rsc = obs.resources[ri].id.clone();
        let here = self.runs(&rsc, &node);
        match ga.task.as_str() {
            "monitor" => Outcome::Rc(if here { 0 } else { 7 }),
            "start" | "stop" | "migrate_to"
                if take_fault(
                    &mut self.faults,
                    (ga.task.clone(), rsc.clone(), node.clone()),
                ) =>
            {
                // The action fails: what ran there goes on running there.
                Outcome::Rc(1)
            }
            "start" => {
                self.truth.entry(rsc).or_default().insert(node);
                Outcome::Rc(0)
            }
            "stop" => {
                if let Some(s) = self.truth.get_mut(&rsc) {
                    s.remove(&node);
                }
                Outcome::Rc(0)
            }
            "migrate_from" => {
                if let Some((s, _)) = ga.migrate {
                    let source = obs.nodes[s].uname.clone();
                    if let Some(set) = self.truth.get_mut(&rsc) {
                        set.remove(&source);
                    }
                }
                self.truth.entry(rsc).or_default().insert(node);
                Outcome::Rc(0)
            }
            _ => Outcome::Rc(ga.expected_rc),
        }
    }

    /// For watchdog-only fencing of a lost node: when its watchdog has surely reset it.
    fn watchdog_wait_until(&self, obs: &Observed, node: &str) -> Option<i64> {
        if obs.resources.iter().any(|r| r.is_stonith()) {
            return None;
        }
        let watchdog = obs.option("have-watchdog").map(is_true).unwrap_or(false);
        let timeout_s = obs
            .option("stonith-watchdog-timeout")
            .map(|v| (parse_interval_ms(v) / 1000) as i64)
            .unwrap_or(0);
        if !watchdog || timeout_s <= 0 {
            return None;
        }
        let lost = self.lost_at.get(node).copied().unwrap_or(self.now);
        Some(lost.saturating_add(timeout_s))
    }

    /// Applies cluster actions (do_shutdown, clear_failcount) and returns the compact list of
    /// what ran, with the fail counts the recorder wrote for failures.
    fn account(&mut self, obs: &Observed, g: &TransitionGraph, executed: &[Fired]) -> Vec<String> {
        let mut ran = Vec::new();
        for e in executed {
            let ga = &g.actions[e.action];
            let node = ga.node.map(|n| &obs.nodes[n]);
            let uname = node.map(|n| n.uname.clone()).unwrap_or_default();
            let ids = node.map(|n| (n.id.clone(), n.uname.clone()));
            let rsc = ga.rsc.map(|r| obs.resources[r].id.clone());
            match (ga.event, e.outcome) {
                (EventKind::Pseudo | EventKind::GuestFence { .. }, _) => {}
                (EventKind::Fence, Outcome::Pending) => {
                    let failures = self.fence_failures.get(&uname).copied().unwrap_or(0);
                    if failures >= fence_attempts_max(obs) {
                        ran.push(format!(
                            "fence:{uname}=GIVEN-UP(after-{failures}-failures,stonith-max-attempts;its-resources-stay-blocked-until-stonith_admin--confirm-{uname})"
                        ));
                    } else {
                        let until = self.watchdog_wait_until(obs, &uname).unwrap_or(self.now);
                        ran.push(format!(
                            "fence:{uname}=waiting-for-watchdog-until-{}s",
                            until - self.start
                        ));
                    }
                }
                (EventKind::Fence, Outcome::Rc(rc) | Outcome::Failed(rc)) if rc != 0 => {
                    let failures = self.fence_failures.get(&uname).copied().unwrap_or(0);
                    ran.push(format!(
                        "fence:{uname}=FAILED({failures}/{})",
                        fence_attempts_max(obs)
                    ));
                }
                (EventKind::Fence, _) => ran.push(format!("fence:{uname}")),
                (EventKind::Unfence, _) => ran.push(format!("unfence:{uname}")),
                (EventKind::Cluster, _) => {
                    // A shutdown's key names its node already: the log names its task.
                    let name = if ga.task == "do_shutdown" {
                        &ga.task
                    } else {
                        &ga.key
                    };
                    ran.push(format!("{name}@{uname}"));
                    if let (Some(ids), "do_shutdown") = (&ids, ga.task.as_str()) {
                        events::mark_down(&mut self.cib, (&ids.0, &ids.1), true);
                    }
                    if let (Some(r), "clear_failcount") = (&rsc, ga.task.as_str()) {
                        events::clear_failures(&mut self.cib, &uname, r);
                    }
                }
                (EventKind::RscOp, Outcome::Pending) => ran.push(format!("{}=pending", ga.key)),
                (EventKind::RscOp, Outcome::Rc(_) | Outcome::Failed(_)) => {
                    let r = rsc.unwrap_or_default();
                    let what = if ga.interval_ms > 0 {
                        format!("{r}_{}_{}@{uname}", ga.task, ga.interval_ms)
                    } else {
                        format!("{r}_{}@{uname}", ga.task)
                    };
                    let probe = ga.task == "monitor" && ga.interval_ms == 0;
                    match e.failed_rc(g) {
                        None => ran.push(what),
                        Some(rc) if probe => ran.push(format!("{what}=rc{rc}(found-active)")),
                        Some(rc) => {
                            let count = self
                                .fail_count(&uname, &r, &ga.task, ga.interval_ms)
                                .unwrap_or_else(|| "none".into());
                            ran.push(format!("{what}=FAILED(rc{rc},fail-count={count})"));
                        }
                    }
                }
            }
        }
        ran
    }

    /// The fail count of `rsc#task_interval` on a node, as written in the CIB.
    fn fail_count(&self, node: &str, rsc: &str, task: &str, interval_ms: u64) -> Option<String> {
        let key = format!("fail-count-{rsc}#{task}_{interval_ms}");
        self.cib
            .status
            .iter()
            .find(|s| s.uname == node)
            .and_then(|s| s.attrs.get(&key).cloned())
    }
}

/// Takes one armed failure for `key`: true when the action must fail.
fn take_fault<K: Ord>(faults: &mut BTreeMap<K, Option<u32>>, key: K) -> bool {
    match faults.get(&key).copied() {
        Some(None) => true,
        Some(Some(n)) if n > 0 => {
            if n == 1 {
                faults.remove(&key);
            } else {
                faults.insert(key, Some(n - 1));
            }
            true
        }
        _ => false,
    }
}

/// `stonith-max-attempts` (Pacemaker's default 10): failed fencing attempts against one node
/// before the controller stops trying.
fn fence_attempts_max(obs: &Observed) -> u32 {
    obs.option("stonith-max-attempts")
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(10)
}

/// Collapses runs of spaces (crm_simulate's column padding) into one.
fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The state the log tracks, as key -> value (nodes, resources, fail counts, notes, records).
pub fn snapshot(cib: &Cib, now: i64) -> BTreeMap<String, String> {
    let t = crate::schedule(cib, now);
    let obs = &t.observed;
    let mut out = BTreeMap::new();
    for n in &obs.nodes {
        let mut s = if n.online { "online" } else { "offline" }.to_string();
        if n.unclean {
            s.push_str(" UNCLEAN");
        }
        if n.shutdown {
            s.push_str(" shutting-down");
        }
        if n.standby && !n.pending {
            s.push_str(" standby");
        }
        if n.pending {
            s.push_str(" pending");
        }
        if crate::lifecycle::evacuating(n) {
            s.push_str(" evacuated");
        }
        out.insert(format!("node {}", n.uname), s);
    }
    for r in &obs.resources {
        let mut s = String::new();
        if r.failed {
            s.push_str("FAILED ");
        }
        let role = if r.role == Role::Unknown {
            Role::Stopped
        } else {
            r.role
        };
        s.push_str(role.text());
        for &ni in &r.running_on {
            let _ = write!(s, " {}", obs.nodes[ni].uname);
        }
        if r.blocked {
            s.push_str(" (blocked)");
        } else if !r.managed {
            s.push_str(" (unmanaged)");
        }
        out.insert(format!("rsc {}", r.id), s);
        for (&ni, &count) in &r.fail_count {
            let c = if count >= INFINITY {
                "INFINITY".to_string()
            } else {
                count.to_string()
            };
            out.insert(format!("fail-count {}@{}", r.id, obs.nodes[ni].uname), c);
        }
    }
    for (k, v) in crate::lifecycle::records(cib) {
        out.insert(k, v);
    }
    for n in &t.recovery {
        out.insert(format!("recovery {}", n.rsc), n.text.clone());
    }
    for n in &t.lifecycle {
        out.insert(format!("lifecycle {}", n.rsc), n.text.clone());
    }
    out
}

/// Runs a scenario: the initial CIB text, the command list, the start time. Returns the log.
pub fn run(cib_text: &str, cmdlist: &str, start: i64) -> Result<String, ScenarioError> {
    let cib = crate::parse_cib(cib_text)?;
    let events = events::parse_cmdlist(cmdlist)?;
    let mut w = World::new(cib, start);
    let initial = snapshot(&w.cib, w.now);
    for (k, v) in &initial {
        w.say(format!("  {k}: {v}"));
    }
    w.settle();
    for e in &events {
        w.step(e)?;
    }
    Ok(w.log())
}

/// Why a scenario could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The CIB cannot be read.
    #[error(transparent)]
    Cib(#[from] crate::CibError),
    /// An event cannot be applied.
    #[error(transparent)]
    Event(#[from] EventError),
}

#[cfg(test)]
mod tests {
    use super::*;

    const CIB: &str = r#"<cib crm_feature_set="3.16.1" have-quorum="1" dc-uuid="1"><configuration>
      <crm_config><cluster_property_set id="o">
        <nvpair id="o1" name="stonith-enabled" value="false"/>
      </cluster_property_set></crm_config>
      <nodes><node id="1" uname="node1"/><node id="2" uname="node2"/></nodes>
      <resources><primitive id="vm1" class="ocf" provider="heartbeat" type="Dummy">
        <operations><op id="m" name="monitor" interval="10s"/></operations>
      </primitive></resources><constraints/></configuration>
      <status>
        <node_state id="1" uname="node1" in_ccm="true" crmd="online" join="member" expected="member"/>
        <node_state id="2" uname="node2" in_ccm="true" crmd="online" join="member" expected="member"/>
      </status></cib>"#;

    #[test]
    fn events_naming_unknown_things_or_impossible_failures_are_errors() {
        let err = |cmd: &str| run(CIB, cmd, 0).unwrap_err().to_string();
        assert!(err("join node9").contains("no node named 'node9'"));
        assert!(err("cleanup vm9").contains("no resource named 'vm9'"));
        // vm1 starts on node1 (first by name); it does not run on node2.
        assert!(err("fail vm1 node2 monitor").contains("does not run on 'node2'"));
        assert!(run(CIB, "fail vm1 node1 monitor", 0).is_ok());
    }

    #[test]
    fn an_armed_start_failure_is_counted_and_the_transition_aborts() {
        let log = run(CIB, "fail vm1 node2 start\nfail vm1 node1 monitor\n", 0).expect("runs");
        // The monitor failure on node1 is recovered in place: node2's armed failure never fires.
        assert!(log.contains("Recover vm1 ( node1 )"), "{log}");
        let log = run(
            CIB,
            "fail vm1 node1 start always\nfail vm1 node1 monitor\n",
            0,
        )
        .expect("runs");
        // start-failure-is-fatal (default): INFINITY on node1, then vm1 moves to node2.
        assert!(
            log.contains("vm1_start@node1=FAILED(rc1,fail-count=INFINITY)"),
            "{log}"
        );
        assert!(
            log.contains("rsc vm1: FAILED Started node1 -> Started node2"),
            "{log}"
        );
    }

    #[test]
    fn a_failed_stop_is_infinity_even_when_start_failures_are_not_fatal() {
        // Pacemaker 2.1.5's controller: failed-stop-offset is always INFINITY; with
        // start-failure-is-fatal=false a failed start adds one.
        let cib = CIB.replace(
            r#"<nvpair id="o1" name="stonith-enabled" value="false"/>"#,
            r#"<nvpair id="o1" name="stonith-enabled" value="false"/>
               <nvpair id="o2" name="start-failure-is-fatal" value="false"/>"#,
        );
        // (A shutdown attribute of 0 means none: start the clock later.)
        let log = run(&cib, "fail vm1 node1 stop\nshutdown node1\n", 1000).expect("runs");
        assert!(
            log.contains("vm1_stop@node1=FAILED(rc1,fail-count=INFINITY)"),
            "{log}"
        );
        let log = run(&cib, "fail vm1 node1 start\nfail vm1 node1 monitor\n", 0).expect("runs");
        assert!(
            log.contains("vm1_start@node1=FAILED(rc1,fail-count=1)"),
            "{log}"
        );
    }

    #[test]
    fn a_failed_migrate_to_is_not_counted() {
        let cib = CIB.replace(
            r#"type="Dummy">"#,
            r#"type="Dummy"><meta_attributes id="m"><nvpair id="m1" name="allow-migrate" value="true"/></meta_attributes>"#,
        );
        let log = run(&cib, "fail vm1 node1 migrate\nshutdown node1\n", 1000).expect("runs");
        assert!(
            log.contains("vm1_migrate_to@node1=FAILED(rc1,fail-count=none)"),
            "{log}"
        );
        assert!(!log.contains("fail-count vm1@node1"), "{log}");
    }

    #[test]
    fn settling_is_bounded() {
        // Starts fail everywhere, for ever: the plan never empties on its own, but each node is
        // banned after its INFINITY fail count, so the run ends with vm1 stopped.
        let log = run(
            CIB,
            "fail vm1 node1 start always\nfail vm1 node2 start always\nfail vm1 node1 monitor\n",
            0,
        )
        .expect("runs");
        assert!(!log.contains("did not settle"), "{log}");
        assert!(log.contains("fail-count vm1@node2: INFINITY"), "{log}");
    }
}
