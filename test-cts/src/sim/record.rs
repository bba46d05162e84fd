//! Writing the CIB as Pacemaker's controller does: the initial configuration, each node's
//! membership in `node_state`, and every operation result as an `lrm_rsc_op` (history ids
//! `<rsc>_last_0`, `<rsc>_last_failure_0`, `<rsc>_monitor_<ms>`, `<rsc>_migrate_to_0`,
//! `<rsc>_migrate_from_0`; call ids per node; `transition-key`, `transition-magic` and `op-digest`; pending
//! migrate_to written with call-id -1, rc 193, op-status -1), plus fail counts as transient node
//! attributes (`fail-count-<rsc>#<op>_<interval>`, `last-failure-...`).

use std::collections::BTreeMap;

use pengine::Cib;
use pengine::unstable::{
    Element, LocationConstraint as Location, LrmResource, NodeState, NvSet, RscOp,
};

use super::options::Options;
use super::rng::Rng;

/// The TE uuid every key of this simulated DC carries.
pub const TE_UUID: &str = "5e1a1a7e-0000-4000-8000-000000000001";

/// The id of the simulated fencing device (a stonith primitive; the fencer itself is simulated).
pub const FENCE_ID: &str = "fence-sim";

/// Seconds since the epoch of virtual time 0 (pengine takes "now" in seconds).
pub const EPOCH_S: i64 = 1_764_460_800;

pub fn now_s(now_ms: u64) -> i64 {
    EPOCH_S + (now_ms / 1000) as i64
}

pub fn node_name(i: usize) -> String {
    format!("node{}", i + 1)
}

pub fn vm_name(i: usize) -> String {
    format!("vm{}", i + 1)
}

/// The configuration section for these options, as XML (parsed once by pengine's own parser).
pub fn initial_cib(opts: &Options, rng: &mut Rng) -> String {
    let mut x = String::new();
    x.push_str("<cib crm_feature_set=\"3.16.1\" validate-with=\"pacemaker-3.9\" epoch=\"1\" num_updates=\"0\" admin_epoch=\"0\" have-quorum=\"1\" dc-uuid=\"1\">\n");
    x.push_str("<configuration><crm_config><cluster_property_set id=\"opts\">\n");
    let props = [
        ("stonith-enabled", "true".to_string()),
        ("have-watchdog", "true".to_string()),
        ("no-quorum-policy", "stop".to_string()),
        ("batch-limit", opts.batch_limit.to_string()),
        (
            "migration-limit",
            opts.migration_limit
                .map(|l| l.to_string())
                .unwrap_or_else(|| "-1".into()),
        ),
    ];
    for (k, v) in props {
        x.push_str(&format!(
            "<nvpair id=\"opt-{k}\" name=\"{k}\" value=\"{v}\"/>\n"
        ));
    }
    x.push_str("</cluster_property_set></crm_config>\n<nodes>\n");
    for i in 0..opts.nodes {
        x.push_str(&format!(
            "<node id=\"{}\" uname=\"{}\"/>\n",
            i + 1,
            node_name(i)
        ));
    }
    x.push_str("</nodes>\n<resources>\n");
    // The fencing device: pengine leaves every resource alone without one.
    x.push_str(&format!(
        "<primitive id=\"{FENCE_ID}\" class=\"stonith\" type=\"fence_sim\"><operations>\
         <op id=\"{FENCE_ID}-mon\" name=\"monitor\" interval=\"60s\" timeout=\"20s\"/></operations></primitive>\n"
    ));
    for v in 0..opts.vms {
        let id = vm_name(v);
        let migrate = rng.chance(opts.allow_migrate_per_mille);
        x.push_str(&format!(
            "<primitive id=\"{id}\" class=\"ocf\" provider=\"highlander\" type=\"VirtualDomain\">\n\
             <instance_attributes id=\"{id}-params\"><nvpair id=\"{id}-config\" name=\"config\" value=\"/etc/highlander/{id}.xml\"/></instance_attributes>\n\
             <meta_attributes id=\"{id}-meta\"><nvpair id=\"{id}-am\" name=\"allow-migrate\" value=\"{migrate}\"/>\
             <nvpair id=\"{id}-mt\" name=\"migration-threshold\" value=\"{mt}\"/>\
             <nvpair id=\"{id}-st\" name=\"resource-stickiness\" value=\"{st}\"/>\
             <nvpair id=\"{id}-mm\" name=\"migration-model\" value=\"{mm}\"/></meta_attributes>\n\
             <operations>\
             <op id=\"{id}-start\" name=\"start\" interval=\"0\" timeout=\"{ot}ms\"/>\
             <op id=\"{id}-stop\" name=\"stop\" interval=\"0\" timeout=\"{ot}ms\"/>\
             <op id=\"{id}-mon\" name=\"monitor\" interval=\"{mi}ms\" timeout=\"{ot}ms\"/>\
             <op id=\"{id}-mto\" name=\"migrate_to\" interval=\"0\" timeout=\"{mto}ms\"/>\
             <op id=\"{id}-mfrom\" name=\"migrate_from\" interval=\"0\" timeout=\"{ot}ms\"/>\
             </operations>\n</primitive>\n",
            mt = opts.migration_threshold,
            st = opts.stickiness,
            mm = opts.profile.migration_model(),
            ot = opts.op_timeout_ms,
            mi = opts.monitor_interval_ms,
            mto = opts.migrate_timeout_ms,
        ));
    }
    x.push_str("</resources>\n<constraints>\n");
    for v in 0..opts.vms {
        // Half the VMs prefer one node; the scenario's vm1 prefers node1.
        let scripted = opts.faults_max == 0;
        if scripted || rng.chance(500) {
            let n = if scripted { 0 } else { rng.index(opts.nodes) };
            x.push_str(&format!(
                "<rsc_location id=\"pref-{vm}\" rsc=\"{vm}\" node=\"{node}\" score=\"50\"/>\n",
                vm = vm_name(v),
                node = node_name(n)
            ));
        }
    }
    x.push_str("</constraints>\n</configuration>\n<status>\n");
    for i in 0..opts.nodes {
        x.push_str(&format!(
            "<node_state id=\"{}\" uname=\"{}\" in_ccm=\"true\" crmd=\"online\" join=\"member\" expected=\"member\"/>\n",
            i + 1,
            node_name(i)
        ));
    }
    x.push_str("</status>\n</cib>\n");
    x
}

/// What the controller knows of a node's membership.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member {
    Up,
    /// Left unexpectedly: unclean until fenced.
    Lost,
    /// Fenced, or left cleanly.
    Down,
}

/// Writes a node's membership into its `node_state`.
pub fn write_member(cib: &mut Cib, node: &str, member: Member) {
    let Some(st) = cib.status.iter_mut().find(|s| s.uname == node) else {
        return;
    };
    let (in_ccm, crmd, join, expected) = match member {
        Member::Up => ("true", "online", "member", "member"),
        Member::Lost => ("false", "offline", "down", "member"),
        Member::Down => ("false", "offline", "down", "down"),
    };
    st.in_ccm = Some(in_ccm.into());
    st.crmd = Some(crmd.into());
    st.join = Some(join.into());
    st.expected = Some(expected.into());
}

pub fn node_state<'a>(cib: &'a mut Cib, node: &str) -> Option<&'a mut NodeState> {
    cib.status.iter_mut().find(|s| s.uname == node)
}

/// One result as the executor reports it.
#[derive(Debug, Clone)]
pub struct OpResult {
    pub rsc: String,
    pub task: String,
    pub interval_ms: u64,
    pub rc: i32,
    pub op_status: i32,
    pub expected_rc: i32,
    /// (graph action id, transition id); transition -1 for events from outside a transition.
    pub action_id: usize,
    pub transition_id: i64,
    pub migrate: Option<(String, String)>,
    pub exit_reason: Option<String>,
}

impl OpResult {
    pub fn failed(&self) -> bool {
        self.op_status != 0 || self.rc != self.expected_rc
    }
}

/// A node's own operation history (the executor's memory), mirrored into the CIB while connected.
#[derive(Debug, Clone, Default)]
pub struct NodeLrm {
    pub lrm: Vec<LrmResource>,
    pub attrs: BTreeMap<String, String>,
    pub call_id: i64,
}

fn history_entry<'a>(lrm: &'a mut Vec<LrmResource>, rsc: &str) -> &'a mut LrmResource {
    let pos = match lrm.iter().position(|l| l.id == rsc) {
        Some(p) => p,
        None => {
            let fence = rsc == FENCE_ID;
            lrm.push(LrmResource {
                id: rsc.to_owned(),
                class: if fence { "stonith" } else { "ocf" }.into(),
                provider: (!fence).then(|| "highlander".into()),
                kind: if fence { "fence_sim" } else { "VirtualDomain" }.into(),
                ops: Vec::new(),
                container: None,
                shutdown_lock: None,
            });
            lrm.len() - 1
        }
    };
    &mut lrm[pos]
}

fn key(r: &OpResult) -> String {
    format!(
        "{}:{}:{}:{TE_UUID}",
        r.action_id, r.transition_id, r.expected_rc
    )
}

/// The `op-digest` of every recorded operation until it is published (see [`rsc_op`] and
/// [`NodeLrm::publish`]): "ran with the configured parameters".
const CONFIGURED_DIGEST: &str = "00000000000000000000000000000000";

fn rsc_op(id: String, r: &OpResult, call_id: i64, rc: i32, status: i32, now_s: i64) -> RscOp {
    let k = key(r);
    let mut element = Element {
        name: "lrm_rsc_op".into(),
        ..Element::default()
    };
    element.set_attr("transition-magic", &format!("{status}:{rc};{k}"));
    // The controller records the digest of the parameters an operation ran with; the simulator's
    // resources never change their parameters, so a marker stands for "as configured" here, and
    // `publish` writes the configured parameters' real digest (pengine, like Pacemaker, compares
    // it with the configuration: a wrong one restarts the resource or reschedules its monitor).
    element.set_attr("op-digest", CONFIGURED_DIGEST);
    RscOp {
        id,
        operation: r.task.clone(),
        call_id,
        rc_code: rc,
        op_status: status,
        interval_ms: r.interval_ms,
        transition_key: Some(k),
        last_rc_change: Some(now_s),
        migrate_source: r.migrate.as_ref().map(|m| m.0.clone()),
        migrate_target: r.migrate.as_ref().map(|m| m.1.clone()),
        exit_reason: r.exit_reason.clone(),
        element,
    }
}

fn history_id(r: &OpResult) -> String {
    if r.interval_ms > 0 {
        format!("{}_{}_{}", r.rsc, r.task, r.interval_ms)
    } else if r.task == "migrate_to" || r.task == "migrate_from" {
        format!("{}_{}_0", r.rsc, r.task)
    } else {
        format!("{}_last_0", r.rsc)
    }
}

fn put(ops: &mut Vec<RscOp>, op: RscOp) {
    ops.retain(|o| o.id != op.id);
    ops.push(op);
}

impl NodeLrm {
    /// migrate_to started with record-pending: the entry that shows it is in flight.
    pub fn record_pending(&mut self, r: &OpResult, now_s: i64) {
        let h = history_entry(&mut self.lrm, &r.rsc);
        put(&mut h.ops, rsc_op(history_id(r), r, -1, 193, -1, now_s));
    }

    /// A result, with its fail count when it failed. Returns the call id.
    pub fn record(&mut self, r: &OpResult, now_s: i64, start_failure_is_fatal: bool) -> i64 {
        self.record_counting(r, now_s, start_failure_is_fatal, true)
    }

    /// [`Self::record`]; `count_failure` false records a failed result without touching its fail
    /// count (the DC ignored the result, see `Sim::deliver`: Pacemaker's controller counts
    /// failures only for the results it processes).
    pub fn record_counting(
        &mut self,
        r: &OpResult,
        now_s: i64,
        start_failure_is_fatal: bool,
        count_failure: bool,
    ) -> i64 {
        self.call_id += 1;
        let call_id = self.call_id;
        let h = history_entry(&mut self.lrm, &r.rsc);
        let op = rsc_op(history_id(r), r, call_id, r.rc, r.op_status, now_s);
        if r.failed() {
            let mut f = op.clone();
            f.id = format!("{}_last_failure_0", r.rsc);
            put(&mut h.ops, f);
        }
        put(&mut h.ops, op);
        // A successful stop (or a migration away) cancels the recurring monitors here.
        if !r.failed() && (r.task == "stop" || r.task == "migrate_to") {
            h.ops.retain(|o| o.interval_ms == 0);
        }
        let probe_miss = r.task == "monitor" && r.interval_ms == 0 && (r.rc == 0 || r.rc == 7);
        if r.failed() && !probe_miss && count_failure {
            let name = format!("{}#{}_{}", r.rsc, r.task, r.interval_ms);
            let fc = format!("fail-count-{name}");
            let next = if r.task == "start" && start_failure_is_fatal {
                "INFINITY".to_string()
            } else {
                let old: i64 = self
                    .attrs
                    .get(&fc)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                (old + 1).to_string()
            };
            self.attrs.insert(fc, next);
            self.attrs
                .insert(format!("last-failure-{name}"), now_s.to_string());
        }
        call_id
    }

    /// `crm_resource --cleanup` for one resource: its history and fail counts are forgotten.
    pub fn cleanup(&mut self, rsc: &str) {
        self.lrm.retain(|l| l.id != rsc);
        let prefixes = [format!("fail-count-{rsc}#"), format!("last-failure-{rsc}#")];
        self.attrs
            .retain(|k, _| !prefixes.iter().any(|p| k.starts_with(p.as_str())));
    }

    /// Whether this resource has a failure recorded here.
    pub fn has_failure(&self, rsc: &str) -> bool {
        self.attrs
            .keys()
            .any(|k| k.starts_with(&format!("fail-count-{rsc}#")))
            || self
                .lrm
                .iter()
                .any(|l| l.id == rsc && l.ops.iter().any(|o| o.id.ends_with("_last_failure_0")))
    }

    /// Mirrors this history into the node's `node_state` in the CIB.
    pub fn publish(&self, cib: &mut Cib, node: &str) {
        let mut lrm = self.lrm.clone();
        let node_attrs = BTreeMap::new();
        for res in &mut lrm {
            for op in &mut res.ops {
                if op.element.attr("op-digest") != Some(CONFIGURED_DIGEST) {
                    continue;
                }
                let key = (op.operation.as_str(), op.interval_ms);
                // Digests do not depend on time here (no rules in the simulated configuration).
                match pengine::unstable::configured_digest(cib, &res.id, key, &node_attrs, 0) {
                    Some(d) => op.element.set_attr("op-digest", &d),
                    None => op.element.attrs.retain(|(k, _)| k != "op-digest"),
                }
            }
        }
        if let Some(st) = node_state(cib, node) {
            st.lrm = lrm;
            st.attrs = self.attrs.clone();
            st.has_lrm = true;
        }
    }
}

/// Adds a location constraint (an administrator's `crm_resource --move`).
pub fn add_location(cib: &mut Cib, id: &str, rsc: &str, node: &str, score: &str) {
    cib.locations.retain(|l| l.id != id);
    cib.locations.push(Location {
        id: id.to_owned(),
        rsc: rsc.to_owned(),
        node: Some(node.to_owned()),
        score: Some(score.to_owned()),
        role: None,
        rules: Vec::new(),
        discovery: None,
    });
}

pub fn remove_location(cib: &mut Cib, id: &str) -> bool {
    let before = cib.locations.len();
    cib.locations.retain(|l| l.id != id);
    before != cib.locations.len()
}

/// Sets or clears a permanent node attribute (`standby`).
pub fn set_node_attr(cib: &mut Cib, node: &str, name: &str, value: Option<&str>) {
    let Some(n) = cib.nodes.iter_mut().find(|n| n.uname == node) else {
        return;
    };
    for set in &mut n.attrs {
        set.pairs.retain(|(k, _)| k != name);
    }
    n.attrs
        .retain(|s| !s.pairs.is_empty() || !s.rules.is_empty());
    if let Some(v) = value {
        n.attrs.push(NvSet {
            id: format!("{node}-{name}"),
            score: 0,
            rules: Vec::new(),
            pairs: vec![(name.to_owned(), v.to_owned())],
        });
    }
}

/// The CIB the planner reads, as a document for `crm_simulate -x` (or `pengine simulate -x`):
/// the initial configuration with the constraints and node attributes as they are now, the
/// status and quorum from `cib`, and `execution-date` set to `now_s` so both planners see the
/// same time.
pub fn cib_document(initial_xml: &str, cib: &Cib, now_s: i64) -> Result<String, String> {
    let mut root = pengine::unstable::parse_xml(initial_xml).map_err(|e| e.to_string())?;
    root.set_attr("execution-date", &now_s.to_string());
    if let Some(config) = root.children.iter_mut().find(|c| c.name == "configuration") {
        for section in &mut config.children {
            match section.name.as_str() {
                "constraints" => {
                    section.children.retain(|c| c.name != "rsc_location");
                    for l in &cib.locations {
                        let mut el = Element {
                            name: "rsc_location".into(),
                            ..Element::default()
                        };
                        el.set_attr("id", &l.id);
                        el.set_attr("rsc", &l.rsc);
                        if let Some(n) = &l.node {
                            el.set_attr("node", n);
                        }
                        if let Some(sc) = &l.score {
                            el.set_attr("score", sc);
                        }
                        section.children.push(el);
                    }
                }
                "nodes" => {
                    for node in &mut section.children {
                        let uname = node.attr("uname").unwrap_or_default().to_owned();
                        node.children.retain(|c| c.name != "instance_attributes");
                        let Some(n) = cib.nodes.iter().find(|n| n.uname == uname) else {
                            continue;
                        };
                        for set in &n.attrs {
                            let mut ia = Element {
                                name: "instance_attributes".into(),
                                ..Element::default()
                            };
                            ia.set_attr("id", &set.id);
                            for (k, v) in &set.pairs {
                                let mut nv = Element {
                                    name: "nvpair".into(),
                                    ..Element::default()
                                };
                                nv.set_attr("id", &format!("{}-{k}", set.id));
                                nv.set_attr("name", k);
                                nv.set_attr("value", v);
                                ia.children.push(nv);
                            }
                            node.children.push(ia);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    Ok(pengine::unstable::render_cib_xml(&root, cib))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(task: &str, interval_ms: u64, rc: i32, expected_rc: i32) -> OpResult {
        OpResult {
            rsc: "vm1".into(),
            task: task.into(),
            interval_ms,
            rc,
            op_status: 0,
            expected_rc,
            action_id: 7,
            transition_id: 3,
            migrate: (task.starts_with("migrate")).then(|| ("node1".into(), "node2".into())),
            exit_reason: None,
        }
    }

    fn ids(h: &NodeLrm) -> Vec<(String, i64, i32)> {
        h.lrm[0]
            .ops
            .iter()
            .map(|o| (o.id.clone(), o.call_id, o.rc_code))
            .collect()
    }

    #[test]
    fn history_ids_call_ids_and_keys_follow_the_controller() {
        let mut h = NodeLrm::default();
        h.record(&result("monitor", 0, 7, 7), 100, true);
        h.record(&result("start", 0, 0, 0), 101, true);
        h.record(&result("monitor", 10_000, 0, 0), 102, true);
        assert_eq!(
            ids(&h),
            vec![
                ("vm1_last_0".into(), 2, 0),
                ("vm1_monitor_10000".into(), 3, 0)
            ]
        );
        let op = &h.lrm[0].ops[0];
        assert_eq!(
            op.transition_key.as_deref(),
            Some("7:3:0:5e1a1a7e-0000-4000-8000-000000000001")
        );
        assert_eq!(
            op.element.attr("transition-magic"),
            Some("0:0;7:3:0:5e1a1a7e-0000-4000-8000-000000000001")
        );
        // record-pending, then the result under the same id; the migration keeps its own entry
        // and the recurring monitor is cancelled by the migration away.
        h.record_pending(&result("migrate_to", 0, 0, 0), 103);
        let pending = h.lrm[0]
            .ops
            .iter()
            .find(|o| o.id == "vm1_migrate_to_0")
            .cloned();
        let pending = pending.expect("pending entry");
        assert_eq!(
            (pending.call_id, pending.rc_code, pending.op_status),
            (-1, 193, -1)
        );
        h.record(&result("migrate_to", 0, 0, 0), 104, true);
        assert_eq!(
            ids(&h),
            vec![
                ("vm1_last_0".into(), 2, 0),
                ("vm1_migrate_to_0".into(), 4, 0)
            ]
        );
        let m = &h.lrm[0].ops[1];
        assert_eq!(
            (m.migrate_source.as_deref(), m.migrate_target.as_deref()),
            (Some("node1"), Some("node2"))
        );
    }

    #[test]
    fn failures_count_and_a_failed_start_is_fatal() {
        let mut h = NodeLrm::default();
        h.record(&result("monitor", 10_000, 1, 0), 200, true);
        h.record(&result("monitor", 10_000, 1, 0), 201, true);
        assert_eq!(
            h.attrs
                .get("fail-count-vm1#monitor_10000")
                .map(String::as_str),
            Some("2")
        );
        assert_eq!(
            h.attrs
                .get("last-failure-vm1#monitor_10000")
                .map(String::as_str),
            Some("201")
        );
        h.record(&result("start", 0, 1, 0), 202, true);
        assert_eq!(
            h.attrs.get("fail-count-vm1#start_0").map(String::as_str),
            Some("INFINITY")
        );
        assert!(h.lrm[0].ops.iter().any(|o| o.id == "vm1_last_failure_0"));
        // A probe that finds the VM running is not a failure to count.
        h.record(&result("monitor", 0, 0, 7), 203, true);
        assert!(!h.attrs.contains_key("fail-count-vm1#monitor_0"));
        assert!(h.has_failure("vm1"));
        h.cleanup("vm1");
        assert!(!h.has_failure("vm1") && h.lrm.is_empty() && h.attrs.is_empty());
    }
}
