//! Unfencing: which nodes are unfenced (fencing action "on") before fencing devices and
//! resources that require unfencing are probed or started there, as Pacemaker 2.1.5 decides.
//!
//! Facts (Pacemaker 2.1.5: lib/pengine/unpack.c, complex.c, pe_actions.c, pe_digest.c, utils.c;
//! lib/pacemaker/pcmk_sched_fencing.c, pcmk_sched_primitive.c, pcmk_sched_probes.c,
//! pcmk_sched_actions.c, pcmk_sched_recurring.c, pcmk_sched_resource.c):
//! - unfencing is in use when the configuration declares it (`Cib::unfencing`: `provides` or
//!   `requires` set to "unfencing" in a resource's or rsc_defaults' meta-attributes);
//! - it concerns fencing devices, and the other resources that require unfencing (`requires`
//!   "unfencing", the default when unfencing is in use and fencing is enabled);
//! - a node counts as unfenced unless its `#node-unfenced` attribute is missing or "0";
//! - an unfencing of the node is ordered before every probe and start of such a resource on a
//!   node, and after every stop there of a resource that requires unfencing (not a device);
//! - it is required when the node was never unfenced ("required by RSC TASK", the first probe or
//!   start asking), when a device's definition changed in the node's history ("Device definition
//!   changed", "Device parameters changed" with " (reload)" or " (reschedule)"; on a node that
//!   cannot be unfenced, every allowed node that can), or, when it is first ordered, the node's
//!   `#digests-all`/`#digests-secure` attributes lack an unfencing device's current digest;
//! - only an online, clean node that is not shutting down is unfenced, and only when it can be
//!   fenced; the first reason given is kept;
//! - a resource concerned that stays on a node being unfenced restarts there ("required
//!   stonith": the unfencing requires its start);
//! - every fencing action carries each unfencing device's digests of its parameters for a
//!   "stonith-on" action (`id:agent:digest,` per device, the devices in reverse order).

use std::collections::BTreeMap;

use crate::observed::{Observed, Resource};
use crate::placement::Desired;
use crate::reconcile::{Change, Reconciliation};

/// A required unfencing of a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unfence {
    pub node: usize,
    /// The first reason given (none when only a changed device digest requires it).
    pub reason: Option<String>,
}

/// Whether a resource that is no fencing device requires unfencing (its `requires`).
pub fn needs_unfencing(obs: &Observed, r: &Resource) -> bool {
    if !obs.unfencing || r.is_stonith() || !obs.stonith_enabled {
        return false;
    }
    match r.meta.get("requires") {
        Some(v) => v.eq_ignore_ascii_case("unfencing"),
        None => true,
    }
}

/// Whether unfencing is ordered before the resource's probes and starts.
pub fn concerns(obs: &Observed, r: &Resource) -> bool {
    (obs.unfencing && r.is_stonith()) || needs_unfencing(obs, r)
}

/// Whether the node was unfenced (Pacemaker's `#node-unfenced` attribute, not "0").
pub fn unfenced(obs: &Observed, ni: usize) -> bool {
    obs.nodes[ni]
        .attrs
        .get("#node-unfenced")
        .is_some_and(|v| v != "0")
}

/// The devices whose digests fencing actions carry: fencing devices that provide unfencing,
/// in reverse configuration order.
fn unfencing_devices(obs: &Observed) -> Vec<usize> {
    let mut devices: Vec<usize> = (0..obs.resources.len())
        .filter(|&ri| {
            let r = &obs.resources[ri];
            r.is_stonith()
                && !r.orphan
                && r.meta
                    .get("provides")
                    .is_some_and(|v| v.eq_ignore_ascii_case("unfencing"))
        })
        .collect();
    devices.reverse();
    devices
}

/// A device's digests for unfencing on a node: (all parameters, non-secret parameters).
fn device_digests(obs: &Observed, ri: usize, ni: usize) -> (String, String) {
    let r = &obs.resources[ri];
    let op = r.op_params("stonith-on", 0, &obs.nodes[ni].attrs, obs.now);
    crate::digest::unfencing_digests(&op, &r.feature_set)
}

/// The `digests_all` and `digests_secure` meta-attributes of a fencing action on a node, when
/// unfencing is in use.
pub fn fencing_digests(obs: &Observed, ni: usize) -> Option<(String, String)> {
    if !obs.unfencing {
        return None;
    }
    let (mut all, mut secure) = (String::new(), String::new());
    for ri in unfencing_devices(obs) {
        let r = &obs.resources[ri];
        let (a, s) = device_digests(obs, ri, ni);
        all.push_str(&format!("{}:{}:{a},", r.id, r.kind));
        secure.push_str(&format!("{}:{}:{s},", r.id, r.kind));
    }
    Some((all, secure))
}

/// Whether the node's recorded unfencing digests miss a device's current ones.
fn digests_changed(obs: &Observed, ni: usize) -> bool {
    let attrs = &obs.nodes[ni].attrs;
    let Some(all) = attrs.get("#digests-all") else {
        return false;
    };
    let secure = attrs.get("#digests-secure");
    unfencing_devices(obs).into_iter().any(|ri| {
        let r = &obs.resources[ri];
        let (a, s) = device_digests(obs, ri, ni);
        !all.contains(&format!("{}:{}:{a}", r.id, r.kind))
            && !secure.is_some_and(|v| v.contains(&format!("{}:{}:{s}", r.id, r.kind)))
    })
}

/// The unfencings as Pacemaker creates them: each node's in creation order, required or not.
struct Unfencings<'a> {
    obs: &'a Observed,
    created: Vec<usize>,
    required: BTreeMap<usize, Option<String>>,
}

impl Unfencings<'_> {
    fn good(&self, ni: usize) -> bool {
        let n = &self.obs.nodes[ni];
        n.online && !n.unclean && !n.shutdown
    }
    /// The node's unfencing exists (ordered against); a changed device digest requires it.
    fn create(&mut self, ni: usize) {
        if self.created.contains(&ni) {
            return;
        }
        self.created.push(ni);
        if digests_changed(self.obs, ni) && self.obs.can_fence(ni) {
            self.required.entry(ni).or_insert(None);
        }
    }
    fn require(&mut self, ni: usize, reason: &str) {
        self.create(ni);
        if self.good(ni) && self.obs.can_fence(ni) {
            let entry = self.required.entry(ni).or_insert(None);
            if entry.is_none() {
                *entry = Some(reason.to_string());
            }
        }
    }
    /// A device's definition changed on a node: that node, or every allowed node that can be.
    fn device_changed(&mut self, desired: &Desired, ri: usize, ni: usize, reason: &str) {
        if self.good(ni) {
            self.require(ni, reason);
            return;
        }
        for m in 0..self.obs.nodes.len() {
            if self.good(m) && allowed(self.obs, desired, ri, m) {
                self.require(m, reason);
            }
        }
    }
}

fn allowed(obs: &Observed, desired: &Desired, ri: usize, ni: usize) -> bool {
    obs.symmetric || desired.scores[ri].contains_key(&ni)
}

/// Where a resource's start (required or not) is created: its target, or the node it stays on.
fn start_node(obs: &Observed, desired: &Desired, rec: &Reconciliation, ri: usize) -> Option<usize> {
    match &rec.changes[ri] {
        Change::Start { target, .. }
        | Change::Move { target, .. }
        | Change::Recover { target, .. }
        | Change::Migrate { target, .. } => Some(*target),
        Change::Restart { node, .. } => Some(*node),
        Change::Keep => desired.assigned[ri]
            .filter(|ni| !desired.unmanaged[ri] && obs.resources[ri].running_on.contains(ni)),
        Change::Stop { .. } => None,
    }
}

/// Decides the required unfencings (`rec.unfence`, in creation order) and restarts the
/// resources concerned that stay on a node being unfenced.
pub fn plan(obs: &Observed, desired: &Desired, rec: &mut Reconciliation) {
    if !obs.unfencing {
        return;
    }
    let mut u = Unfencings {
        obs,
        created: Vec::new(),
        required: BTreeMap::new(),
    };
    // Internal constraints: every allowed node of a managed resource requiring unfencing, by name.
    let mut by_name: Vec<usize> = (0..obs.nodes.len()).collect();
    by_name
        .sort_by(|&a, &b| crate::observed::natural_cmp(&obs.nodes[a].uname, &obs.nodes[b].uname));
    for (ri, r) in obs.resources.iter().enumerate() {
        if r.orphan || desired.unmanaged[ri] || !needs_unfencing(obs, r) {
            continue;
        }
        for &ni in &by_name {
            if allowed(obs, desired, ri, ni) {
                u.create(ni);
            }
        }
    }
    // A device's changed definition in its history.
    for (ri, r) in obs.resources.iter().enumerate() {
        if !r.is_stonith() || r.orphan {
            continue;
        }
        for &ni in &r.agent_changed_on {
            u.device_changed(desired, ri, ni, "Device definition changed");
        }
        for &ni in &r.definition_restart {
            u.device_changed(desired, ri, ni, "Device parameters changed");
        }
        for &ni in &r.reload_on {
            u.device_changed(desired, ri, ni, "Device parameters changed (reload)");
        }
        for &(ni, _) in &r.rescheduled {
            u.device_changed(desired, ri, ni, "Device parameters changed (reschedule)");
        }
    }
    for &(ri, ni) in &rec.probes {
        let r = &obs.resources[ri];
        if concerns(obs, r) {
            u.create(ni);
            if !unfenced(obs, ni) {
                u.require(ni, &format!("required by {} monitor", r.id));
            }
        }
    }
    for t in &desired.order {
        let members = match *t {
            crate::observed::Top::Primitive(ri) => vec![ri],
            crate::observed::Top::Group(gi) => obs.groups[gi].members.clone(),
        };
        for ri in members {
            let r = &obs.resources[ri];
            let Some(ni) = start_node(obs, desired, rec, ri) else {
                continue;
            };
            if concerns(obs, r) {
                u.create(ni);
                if !unfenced(obs, ni) {
                    u.require(ni, &format!("required by {} start", r.id));
                }
            }
        }
    }
    // The unfencing requires the start of what stays on its node: a restart.
    for ri in 0..obs.resources.len() {
        if rec.changes[ri] != Change::Keep || !concerns(obs, &obs.resources[ri]) {
            continue;
        }
        if let Some(ni) = start_node(obs, desired, rec, ri) {
            if u.required.contains_key(&ni) && !obs.resources[ri].blocked {
                rec.changes[ri] = Change::Restart {
                    node: ni,
                    reason: Some("required stonith".into()),
                };
            }
        }
    }
    rec.unfence = u
        .created
        .iter()
        .filter_map(|&ni| {
            u.required.get(&ni).map(|reason| Unfence {
                node: ni,
                reason: reason.clone(),
            })
        })
        .collect();
}

#[cfg(test)]
mod tests {
    use crate::graph::{self, EventKind};

    /// Three nodes, a fence_scsi device (its parameters are those of Pacemaker's corpus case
    /// unfence-device) declared with `provides`, and a Dummy resource; `extra` goes into the
    /// resources section, `status` is each node's transient attributes.
    fn cib(provides: &str, extra: &str, status: [&str; 3]) -> crate::Cib {
        let states: String = (1..=3)
            .map(|i| {
                format!(
                    r#"<node_state id="{i}" uname="n{i}" in_ccm="true" crmd="online" join="member" expected="member"><transient_attributes id="{i}"><instance_attributes id="s{i}">{}</instance_attributes></transient_attributes><lrm id="{i}"><lrm_resources/></lrm></node_state>"#,
                    status[i - 1]
                )
            })
            .collect();
        let xml = format!(
            r#"<cib crm_feature_set="3.0.12" have-quorum="1" dc-uuid="1"><configuration><crm_config/><nodes><node id="1" uname="n1"/><node id="2" uname="n2"/><node id="3" uname="n3"/></nodes><resources>
<primitive class="stonith" id="scsi" type="fence_scsi"><instance_attributes id="scsi-i"><nvpair id="d" name="devices" value="/dev/disk/by-id/scsi-36001405a853dfde18e94ae885bda3b65,/dev/disk/by-id/scsi-360014059f350cbdba7243278a4b5da87"/><nvpair id="hc" name="pcmk_host_check" value="static-list"/><nvpair id="hl" name="pcmk_host_list" value="virt-008,virt-009,virt-013"/><nvpair id="ra" name="pcmk_reboot_action" value="off"/></instance_attributes><meta_attributes id="scsi-m"><nvpair id="p" name="provides" value="{provides}"/></meta_attributes></primitive>{extra}</resources><constraints><rsc_location id="l" rsc="scsi" node="n1" score="100"/></constraints></configuration><status>{states}</status></cib>"#
        );
        crate::parse_cib(&xml).expect("test CIB parses")
    }

    fn lines(t: &crate::Transition) -> String {
        graph::render_summary(&t.observed, &t.plan, &t.reconciliation, &t.graph)
    }

    #[test]
    fn a_node_never_unfenced_is_unfenced_before_probes_and_starts() {
        let unfenced = r##"<nvpair id="u" name="#node-unfenced" value="1512038669"/>"##;
        let t = crate::schedule(&cib("unfencing", "", ["", unfenced, ""]), 0);
        let s = lines(&t);
        assert!(
            s.contains("* Fence (on) n3 'required by scsi monitor'"),
            "{s}"
        );
        assert!(
            s.contains("* Fence (on) n1 'required by scsi monitor'"),
            "{s}"
        );
        assert!(!s.contains("Fence (on) n2"), "n2 was unfenced already: {s}");
        // The latest created first, as Pacemaker prints node actions.
        assert!(s.find("n3 'required").unwrap() < s.find("n1 'required").unwrap());
        let g = &t.graph;
        let unfence = |n: &str| {
            (0..g.actions.len())
                .find(|&i| g.actions[i].key == format!("stonith-{n}-on"))
                .expect("unfencing in the graph")
        };
        assert_eq!(g.actions[unfence("n1")].event, EventKind::Unfence);
        let start = (0..g.actions.len())
            .find(|&i| g.actions[i].key == "scsi_start_0")
            .expect("start");
        let probe_n3 = (0..g.actions.len())
            .find(|&i| {
                g.actions[i].key == "scsi_monitor_0"
                    && g.actions[i]
                        .node
                        .map(|n| t.observed.nodes[n].uname.as_str())
                        == Some("n3")
            })
            .expect("probe on n3");
        let input = |a: usize, b: usize| {
            g.synapses
                .iter()
                .any(|s| s.action == b && s.inputs.contains(&a))
        };
        assert!(input(unfence("n1"), start));
        assert!(input(unfence("n3"), probe_n3));
        assert!(!input(unfence("n1"), probe_n3));
    }

    #[test]
    fn the_graph_carries_the_device_digests_pacemaker_computes() {
        let t = crate::schedule(&cib("unfencing", "", ["", "", ""]), 0);
        let xml = graph::render_graph_xml(&t.observed, &t.graph);
        // Pacemaker 2.1.5's values for these parameters (corpus case unfence-device).
        assert!(
            xml.contains(
                r#"CRM_meta_digests_all="scsi:fence_scsi:5950f402238c1e5058a556fe39bb09de,""#
            ),
            "{xml}"
        );
        assert!(
            xml.contains(
                r#"CRM_meta_digests_secure="scsi:fence_scsi:a911b9a554cdc5844d863a91b1ef283a,""#
            ),
            "{xml}"
        );
        assert!(xml.contains(r#"CRM_meta_stonith_action="on""#));
        assert!(
            !xml.contains("<downed>"),
            "unfencing brings no node down: {xml}"
        );
    }

    #[test]
    fn without_the_declaration_nothing_is_unfenced() {
        let t = crate::schedule(&cib("nothing", "", ["", "", ""]), 0);
        assert!(t.reconciliation.unfence.is_empty());
        assert!(!lines(&t).contains("Fence (on)"));
        let xml = graph::render_graph_xml(&t.observed, &t.graph);
        assert!(!xml.contains("digests_all"));
    }

    #[test]
    fn a_resource_requiring_unfencing_restarts_around_its_node_unfencing() {
        let unfenced = r##"<nvpair id="u" name="#node-unfenced" value="1"/>"##;
        // The Dummy runs on n2, which was unfenced with other device parameters.
        let dummy = r#"<primitive class="ocf" provider="pacemaker" id="d" type="Dummy"/>"#;
        let changed = r##"<nvpair id="da" name="#digests-all" value="scsi:fence_scsi:0123,"/>"##;
        let c = {
            let xml = format!(
                r#"<cib crm_feature_set="3.0.12" have-quorum="1" dc-uuid="1"><configuration><crm_config/><nodes><node id="1" uname="n1"/><node id="2" uname="n2"/></nodes><resources><primitive class="stonith" id="scsi" type="fence_scsi"><meta_attributes id="scsi-m"><nvpair id="p" name="provides" value="unfencing"/></meta_attributes></primitive>{dummy}</resources><constraints><rsc_location id="l" rsc="scsi" node="n1" score="100"/><rsc_location id="l2" rsc="d" node="n2" score="100"/></constraints></configuration><status>
<node_state id="1" uname="n1" in_ccm="true" crmd="online" join="member" expected="member"><transient_attributes id="1"><instance_attributes id="s1">{unfenced}</instance_attributes></transient_attributes><lrm id="1"><lrm_resources><lrm_resource id="scsi" class="stonith" type="fence_scsi"><lrm_rsc_op id="scsi_last_0" operation_key="scsi_start_0" operation="start" call-id="2" rc-code="0" op-status="0" interval="0" transition-key="1:0:0:x" op-digest="f2317cad3d54cec5d7d7aa7d0bf35cf8"/></lrm_resource><lrm_resource id="d" class="ocf" provider="pacemaker" type="Dummy"><lrm_rsc_op id="d_last_0" operation_key="d_monitor_0" operation="monitor" call-id="1" rc-code="7" op-status="0" interval="0" transition-key="1:0:7:x" op-digest="f2317cad3d54cec5d7d7aa7d0bf35cf8"/></lrm_resource></lrm_resources></lrm></node_state>
<node_state id="2" uname="n2" in_ccm="true" crmd="online" join="member" expected="member"><transient_attributes id="2"><instance_attributes id="s2">{unfenced}{changed}</instance_attributes></transient_attributes><lrm id="2"><lrm_resources><lrm_resource id="scsi" class="stonith" type="fence_scsi"><lrm_rsc_op id="scsi_last_0" operation_key="scsi_monitor_0" operation="monitor" call-id="1" rc-code="7" op-status="0" interval="0" transition-key="1:0:7:x" op-digest="f2317cad3d54cec5d7d7aa7d0bf35cf8"/></lrm_resource><lrm_resource id="d" class="ocf" provider="pacemaker" type="Dummy"><lrm_rsc_op id="d_last_0" operation_key="d_start_0" operation="start" call-id="2" rc-code="0" op-status="0" interval="0" transition-key="1:0:0:x" op-digest="f2317cad3d54cec5d7d7aa7d0bf35cf8"/></lrm_resource></lrm_resources></lrm></node_state></status></cib>"#
            );
            crate::parse_cib(&xml).expect("test CIB parses")
        };
        let t = crate::schedule(&c, 0);
        let s = lines(&t);
        assert!(s.contains("* Fence (on) n2\n"), "{s}");
        assert!(!s.contains("Fence (on) n1"), "{s}");
        assert!(s.contains("Restart"), "{s}");
        assert!(s.contains("due to required stonith"), "{s}");
        // stop, then unfencing, then start.
        let g = &t.graph;
        let key = |k: &str| {
            (0..g.actions.len())
                .find(|&i| g.actions[i].key == k)
                .expect(k)
        };
        let input = |a: usize, b: usize| {
            g.synapses
                .iter()
                .any(|s| s.action == b && s.inputs.contains(&a))
        };
        assert!(input(key("d_stop_0"), key("stonith-n2-on")));
        assert!(input(key("stonith-n2-on"), key("d_start_0")));
    }
}
