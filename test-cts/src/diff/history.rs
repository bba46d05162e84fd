//! The `<status>` section of a generated CIB: one `node_state` per node (member, offline,
//! unclean), transient attributes (shutdown, fail counts) and an operation history per node as
//! the controller records it in Pacemaker 2.1.5 (`lib/pengine/unpack.c` reads it): `_last_0`
//! for the newest non-recurring operation, `_last_failure_0` for the newest failure, one entry
//! per recurring operation, increasing call ids, `transition-key` carrying the expected rc, and
//! `op-digest` computed as Pacemaker does (or deliberately stale).

use super::generator::{Agent, Model, NodeState, Prim, Shape};
use super::md5::md5_hex;
use super::rng::Rng;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The CRM feature set of Debian 12's Pacemaker 2.1.5 (a newer one is refused).
pub const FEATURE_SET: &str = "3.16.1";
const UUID: &str = "6f1a7c7e-0000-4000-8000-000000000001";
/// Operations happened long ago: a `failure-timeout` has always expired.
const EPOCH_S: u64 = 1_700_000_000;
/// `op-status` values (PCMK_EXEC_*).
const DONE: i32 = 0;
const PENDING: i32 = -1;
const TIMEOUT: i32 = 2;
const NOT_RUNNING: i32 = 7;
const PROMOTED_RC: i32 = 8;

/// The recurring monitors of a primitive: interval in seconds and role.
pub fn monitors(prim: &Prim) -> Vec<(u64, Option<&'static str>)> {
    match prim.agent {
        Agent::Dummy => vec![(10, None)],
        Agent::Stateful => vec![(10, Some("Promoted")), (11, Some("Unpromoted"))],
        Agent::Fence => vec![(60, None)],
    }
}

/// What happened to one primitive on one node.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fate {
    Nothing,
    Probed,
    Running,
    Promoted,
    StartFailed(i32, i32),
    MonitorFailed(i32),
    StopFailed(i32, i32),
    Stopped,
    Pending(&'static str),
    /// Migration phases on the source (`target` is the other node's index).
    MigratedTo {
        target: usize,
        rc: i32,
    },
    MigratedAway {
        target: usize,
    },
    /// On the target (`source` is the other node's index).
    MigratedFrom {
        source: usize,
        rc: i32,
    },
    MigratedHere {
        source: usize,
    },
}

struct Entry {
    id: String,
    task: &'static str,
    interval_ms: u64,
    rc: i32,
    status: i32,
    target_rc: i32,
    call: i64,
    digest: String,
    migrate: Option<(String, String)>,
}

/// One node's history as it is being written.
#[derive(Default)]
struct NodeLog {
    call: i64,
    /// Per resource: its agent description and its entries by id.
    resources: BTreeMap<String, (String, BTreeMap<String, Entry>)>,
    attrs: Vec<(String, String)>,
}

fn agent_attrs(prim: &Prim) -> String {
    match prim.agent {
        Agent::Dummy => r#"type="Dummy" class="ocf" provider="pacemaker""#.into(),
        Agent::Stateful => r#"type="Stateful" class="ocf" provider="pacemaker""#.into(),
        Agent::Fence => r#"type="fence_xvm" class="stonith""#.into(),
    }
}

/// The digest of a primitive's operation, as `lib/pengine/pe_digest.c` computes it: the
/// instance attributes sorted, plus the timeout of a recurring operation.
fn digest(prim: &Prim, interval_ms: u64, stale: bool) -> String {
    let mut params: BTreeMap<String, String> = prim.params.iter().cloned().collect();
    if interval_ms > 0 {
        params.insert("CRM_meta_timeout".into(), "20000".into());
    }
    if stale {
        params.insert("fake".into(), "/vm/previous.xml".into());
    }
    let mut text = String::from(" <parameters");
    for (name, value) in &params {
        let _ = write!(text, r#" {name}="{value}""#);
    }
    text.push_str("/>\n");
    md5_hex(text.as_bytes())
}

struct Recorder<'a> {
    prim: &'a Prim,
    stale: bool,
    node_names: Vec<String>,
}

impl Recorder<'_> {
    /// Records one operation on `log`; a failure also becomes `_last_failure_0`.
    fn op(&self, log: &mut NodeLog, task: &'static str, interval_ms: u64, rc: i32, status: i32) {
        let rsc = &self.prim.id;
        let target_rc = match (task, interval_ms, rc) {
            ("monitor", 0, _) => NOT_RUNNING,
            ("monitor", _, PROMOTED_RC) => PROMOTED_RC,
            _ => 0,
        };
        log.call += 1;
        let call = if status == PENDING { -1 } else { log.call };
        let id = if interval_ms > 0 {
            format!("{rsc}_{task}_{interval_ms}")
        } else {
            format!("{rsc}_last_0")
        };
        let entry = Entry {
            id: id.clone(),
            task,
            interval_ms,
            rc,
            status,
            target_rc,
            call,
            digest: digest(self.prim, interval_ms, self.stale),
            migrate: None,
        };
        let failed = status != DONE && status != PENDING
            || (rc != target_rc && !(interval_ms == 0 && task == "monitor" && rc == 0));
        let (_, entries) = log
            .resources
            .entry(rsc.clone())
            .or_insert_with(|| (agent_attrs(self.prim), BTreeMap::new()));
        if failed && status != PENDING {
            let copy = Entry {
                id: format!("{rsc}_last_failure_0"),
                digest: entry.digest.clone(),
                migrate: None,
                ..entry
            };
            entries.insert(copy.id.clone(), copy);
        }
        entries.insert(id, entry);
    }

    fn migrate(&self, log: &mut NodeLog, task: &'static str, rc: i32, src: usize, tgt: usize) {
        self.op(log, task, 0, rc, DONE);
        let names = (self.node_names[src].clone(), self.node_names[tgt].clone());
        let rsc = &self.prim.id;
        for id in [format!("{rsc}_last_0"), format!("{rsc}_last_failure_0")] {
            if let Some(e) = log
                .resources
                .get_mut(rsc)
                .and_then(|(_, entries)| entries.get_mut(&id))
                .filter(|e| e.task == task)
            {
                e.migrate = Some(names.clone());
            }
        }
    }

    /// Drops the recurring entries: a stop or a migration cancels them.
    fn cancel_recurring(&self, log: &mut NodeLog) {
        if let Some((_, entries)) = log.resources.get_mut(&self.prim.id) {
            entries.retain(|_, e| e.interval_ms == 0);
        }
    }

    fn start(&self, log: &mut NodeLog, rng: &mut Rng) {
        if rng.chance(30) {
            // Found running by its probe.
            self.op(log, "monitor", 0, 0, DONE);
        } else {
            self.op(log, "start", 0, 0, DONE);
        }
    }

    fn monitor(&self, log: &mut NodeLog, role: Option<&str>, rc: i32) {
        for (interval_s, r) in monitors(self.prim) {
            if r == role || (role.is_none() && r == Some("Unpromoted")) {
                self.op(log, "monitor", interval_s * 1000, rc, DONE);
                return;
            }
        }
    }

    fn apply(&self, log: &mut NodeLog, rng: &mut Rng, fate: Fate) {
        match fate {
            Fate::Nothing => {}
            Fate::Probed => self.op(log, "monitor", 0, NOT_RUNNING, DONE),
            Fate::Running => {
                self.start(log, rng);
                self.monitor(log, None, 0);
            }
            Fate::Promoted => {
                self.op(log, "start", 0, 0, DONE);
                self.op(log, "promote", 0, 0, DONE);
                self.monitor(log, Some("Promoted"), PROMOTED_RC);
            }
            Fate::StartFailed(rc, status) => self.op(log, "start", 0, rc, status),
            Fate::MonitorFailed(rc) => {
                self.start(log, rng);
                self.monitor(log, None, rc);
            }
            Fate::StopFailed(rc, status) => self.after_running(log, rng, "stop", rc, status),
            Fate::Pending("stop") => self.after_running(log, rng, "stop", 193, PENDING),
            Fate::Pending("migrate_to") => self.after_running(log, rng, "migrate_to", 193, PENDING),
            Fate::Stopped => self.after_running(log, rng, "stop", 0, DONE),
            Fate::Pending(task) => self.op(log, task, 0, 193, PENDING),
            _ => self.apply_migration(log, rng, fate),
        }
    }

    /// Started and monitored, then `task` (a stop or a migration) with `rc` and `status`.
    fn after_running(
        &self,
        log: &mut NodeLog,
        rng: &mut Rng,
        task: &'static str,
        rc: i32,
        status: i32,
    ) {
        self.start(log, rng);
        self.monitor(log, None, 0);
        self.cancel_recurring(log);
        self.op(log, task, 0, rc, status);
    }

    fn apply_migration(&self, log: &mut NodeLog, rng: &mut Rng, fate: Fate) {
        match fate {
            Fate::MigratedTo { target, .. } | Fate::MigratedAway { target } => {
                let source = self.node_index(log);
                let rc = if let Fate::MigratedTo { rc, .. } = fate {
                    rc
                } else {
                    0
                };
                self.start(log, rng);
                self.monitor(log, None, 0);
                self.cancel_recurring(log);
                self.migrate(log, "migrate_to", rc, source, target);
                if matches!(fate, Fate::MigratedAway { .. }) {
                    self.op(log, "stop", 0, 0, DONE);
                }
            }
            Fate::MigratedFrom { source, .. } | Fate::MigratedHere { source } => {
                let target = self.node_index(log);
                let rc = if let Fate::MigratedFrom { rc, .. } = fate {
                    rc
                } else {
                    0
                };
                if rng.chance(50) {
                    self.op(log, "monitor", 0, NOT_RUNNING, DONE);
                }
                self.migrate(log, "migrate_from", rc, source, target);
                if matches!(fate, Fate::MigratedHere { .. }) {
                    self.monitor(log, None, 0);
                }
            }
            _ => {}
        }
    }

    /// The index of the node `log` belongs to (stored in its first attribute slot).
    fn node_index(&self, log: &NodeLog) -> usize {
        log.attrs
            .iter()
            .find(|(k, _)| k == "#index")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0)
    }
}

const FAIL_RCS: [i32; 7] = [1, 2, 3, 4, 5, 6, 7];

fn failure_fate(rng: &mut Rng, model: &mut Model) -> Fate {
    let timeout = rng.chance(20);
    let (rc, status) = if timeout {
        (1, TIMEOUT)
    } else {
        (rng.pick(&FAIL_RCS), DONE)
    };
    let kind = rng.below(3);
    let fate = match kind {
        0 => Fate::StartFailed(rc, status),
        1 => Fate::MonitorFailed(if timeout { 1 } else { rc }),
        _ => Fate::StopFailed(1, status),
    };
    let name = ["start", "monitor", "stop"][kind];
    let what = if timeout {
        "timeout".to_string()
    } else {
        format!("rc{}", if kind == 2 { 1 } else { rc })
    };
    model.feature(format!("history:{name}-failed-{what}"));
    fate
}

/// The fates of a primitive that runs on one node at a time: by node index.
fn single_fates(
    rng: &mut Rng,
    model: &mut Model,
    prim: &Prim,
    home: usize,
    hosts: &[usize],
) -> Vec<(usize, Fate)> {
    let mut fates = Vec::new();
    let other = hosts.iter().copied().find(|&n| n != home);
    let migratable = prim.meta("allow-migrate") == Some("true");
    let roll = rng.below(100);
    match roll {
        0..=14 => {}
        15..=54 => fates.push((home, Fate::Running)),
        55..=69 => fates.push((home, failure_fate(rng, model))),
        70..=74 => {
            let task = rng.pick(&["start", "stop", "migrate_to"]);
            let task = if task == "migrate_to" && !migratable {
                "start"
            } else {
                task
            };
            model.feature(format!("history:pending-{task}"));
            fates.push((home, Fate::Pending(task)));
        }
        75..=79 => {
            model.feature("history:stopped");
            fates.push((home, Fate::Stopped));
        }
        80..=91 if migratable && other.is_some() => {
            let target = other.unwrap_or(home);
            fates.extend(migration(rng, model, home, target));
        }
        _ => match other {
            Some(second) if rng.chance(40) => {
                model.feature("history:multiple-active");
                fates.push((home, Fate::Running));
                fates.push((second, Fate::Running));
            }
            _ => fates.push((home, Fate::Running)),
        },
    }
    for &n in hosts {
        if !fates.iter().any(|(m, _)| *m == n) && rng.chance(60) {
            fates.push((n, Fate::Probed));
        }
    }
    fates
}

fn migration(rng: &mut Rng, model: &mut Model, source: usize, target: usize) -> Vec<(usize, Fate)> {
    let phase = rng.below(5);
    let name = [
        "to-done",
        "to-failed",
        "from-done",
        "from-failed",
        "completed",
    ][phase];
    model.feature(format!("history:migration-{name}"));
    match phase {
        0 => vec![(source, Fate::MigratedTo { target, rc: 0 })],
        1 => vec![(source, Fate::MigratedTo { target, rc: 1 })],
        2 => vec![
            (source, Fate::MigratedTo { target, rc: 0 }),
            (target, Fate::MigratedFrom { source, rc: 0 }),
        ],
        3 => vec![
            (source, Fate::MigratedTo { target, rc: 0 }),
            (target, Fate::MigratedFrom { source, rc: 1 }),
        ],
        _ => vec![
            (source, Fate::MigratedAway { target }),
            (target, Fate::MigratedHere { source }),
        ],
    }
}

/// The fates of a clone's primitive: an instance per node, one of them promoted.
fn clone_fates(
    rng: &mut Rng,
    model: &mut Model,
    promotable: bool,
    hosts: &[usize],
) -> Vec<(usize, Fate)> {
    let mut promoted = false;
    let mut fates = Vec::new();
    for &n in hosts {
        let fate = match rng.below(100) {
            0..=54 if promotable && !promoted && rng.chance(60) => {
                promoted = true;
                Fate::Promoted
            }
            0..=54 => Fate::Running,
            55..=69 => Fate::Probed,
            70..=79 => failure_fate(rng, model),
            _ => Fate::Nothing,
        };
        fates.push((n, fate));
    }
    fates
}

/// Nodes that keep a history: every node but a cleanly stopped one.
fn hosts(model: &Model) -> Vec<usize> {
    (0..model.nodes.len())
        .filter(|&i| model.nodes[i].state != NodeState::Offline)
        .collect()
}

fn record_failcounts(
    rng: &mut Rng,
    model: &mut Model,
    logs: &mut [NodeLog],
    prim: &Prim,
    fates: &[(usize, Fate)],
) {
    for (node, fate) in fates {
        let op = match fate {
            Fate::StartFailed(..) => "start_0",
            Fate::MonitorFailed(_) => "monitor_10000",
            Fate::StopFailed(..) => "stop_0",
            _ => continue,
        };
        if prim.meta("failure-timeout").is_some() {
            model.feature("history:expired-failure");
        }
        if !rng.chance(70) {
            continue;
        }
        model.feature("history:fail-count");
        let count = 1 + rng.below(3);
        let log = &mut logs[*node];
        log.attrs
            .push((format!("fail-count-{}#{op}", prim.id), count.to_string()));
        log.attrs.push((
            format!("last-failure-{}#{op}", prim.id),
            (EPOCH_S + 5).to_string(),
        ));
    }
}

fn prim_history(
    rng: &mut Rng,
    model: &mut Model,
    logs: &mut [NodeLog],
    prim: &Prim,
    shape: Shape,
    home: usize,
) {
    let hosts = hosts(model);
    let fates = match (shape, prim.agent) {
        (_, Agent::Fence) => {
            let fate = if rng.chance(60) {
                Fate::Running
            } else {
                Fate::Nothing
            };
            vec![(home, fate)]
        }
        (Shape::Clone, _) => clone_fates(rng, model, false, &hosts),
        (Shape::Promotable, _) => clone_fates(rng, model, true, &hosts),
        _ => single_fates(rng, model, prim, home, &hosts),
    };
    let stale = rng.chance(8);
    if stale && fates.iter().any(|(_, f)| *f != Fate::Nothing) {
        model.feature("history:digest-mismatch");
    }
    let recorder = Recorder {
        prim,
        stale,
        node_names: model.nodes.iter().map(|n| n.name.clone()).collect(),
    };
    for (node, fate) in &fates {
        recorder.apply(&mut logs[*node], rng, *fate);
    }
    record_failcounts(rng, model, logs, prim, &fates);
}

/// Writes the status section and records the history features in `model`.
pub fn status(rng: &mut Rng, model: &mut Model) -> String {
    let mut logs: Vec<NodeLog> = (0..model.nodes.len())
        .map(|i| NodeLog {
            call: 1 + rng.below(20) as i64,
            attrs: vec![("#index".to_string(), i.to_string())],
            ..NodeLog::default()
        })
        .collect();
    let hosts = hosts(model);
    let tops = std::mem::take(&mut model.tops);
    for top in &tops {
        let home = hosts[rng.below(hosts.len())];
        for prim in &top.prims {
            prim_history(rng, model, &mut logs, prim, top.shape, home);
        }
    }
    model.tops = tops;
    write_status(model, &logs)
}

fn write_entry(xml: &mut String, rsc: &str, node: &str, e: &Entry) {
    let key = format!("{rsc}_{}_{}", e.task, e.interval_ms);
    let tk = format!("{}:5:{}:{UUID}", e.call.max(1), e.target_rc);
    let migrate = e
        .migrate
        .as_ref()
        .map(|(s, t)| format!(r#" migrate_source="{s}" migrate_target="{t}""#))
        .unwrap_or_default();
    let t = EPOCH_S + e.call.max(0) as u64 * 10;
    let _ = writeln!(
        xml,
        r#"          <lrm_rsc_op id="{}" operation_key="{key}" operation="{}" crm-debug-origin="do_update_resource" crm_feature_set="{FEATURE_SET}" transition-key="{tk}" transition-magic="{}:{};{tk}" exit-reason="" on_node="{node}" call-id="{}" rc-code="{}" op-status="{}" interval="{}" last-rc-change="{t}" exec-time="10" queue-time="0" op-digest="{}"{migrate}/>"#,
        e.id, e.task, e.status, e.rc, e.call, e.rc, e.status, e.interval_ms, e.digest
    );
}

fn node_state_attrs(state: NodeState) -> &'static str {
    match state {
        NodeState::Offline => r#"in_ccm="false" crmd="offline" join="down" expected="down""#,
        NodeState::Unclean => r#"in_ccm="false" crmd="offline" join="member" expected="member""#,
        _ => r#"in_ccm="true" crmd="online" join="member" expected="member""#,
    }
}

fn write_status(model: &Model, logs: &[NodeLog]) -> String {
    let mut xml = String::from("  <status>\n");
    for (node, log) in model.nodes.iter().zip(logs) {
        let id = node.id;
        let _ = writeln!(
            xml,
            r#"    <node_state id="{id}" uname="{}" {} crm-debug-origin="do_update_resource">"#,
            node.name,
            node_state_attrs(node.state)
        );
        let mut attrs: Vec<(String, String)> = log
            .attrs
            .iter()
            .filter(|(k, _)| k != "#index")
            .cloned()
            .collect();
        if node.state == NodeState::Shutdown {
            attrs.push(("shutdown".into(), EPOCH_S.to_string()));
        }
        if !attrs.is_empty() {
            let _ = write!(
                xml,
                r#"      <transient_attributes id="{id}"><instance_attributes id="status-{id}">"#
            );
            for (i, (name, value)) in attrs.iter().enumerate() {
                let _ = write!(
                    xml,
                    r#"<nvpair id="status-{id}-{i}" name="{name}" value="{value}"/>"#
                );
            }
            xml.push_str("</instance_attributes></transient_attributes>\n");
        }
        let _ = writeln!(xml, r#"      <lrm id="{id}"><lrm_resources>"#);
        for (rsc, (agent, entries)) in &log.resources {
            let _ = writeln!(xml, r#"        <lrm_resource id="{rsc}" {agent}>"#);
            for entry in entries.values() {
                write_entry(&mut xml, rsc, &node.name, entry);
            }
            xml.push_str("        </lrm_resource>\n");
        }
        xml.push_str("      </lrm_resources></lrm>\n    </node_state>\n");
    }
    if !model.tickets.is_empty() {
        xml.push_str("    <tickets>\n");
        for (name, granted) in &model.tickets {
            let _ = writeln!(
                xml,
                r#"      <ticket_state id="{name}" granted="{granted}" last-granted="{EPOCH_S}"/>"#
            );
        }
        xml.push_str("    </tickets>\n");
    }
    xml.push_str("  </status>\n");
    xml
}
