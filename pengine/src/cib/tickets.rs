//! Tickets in the CIB: `<rsc_ticket>` constraints (plain and with resource sets) and the ticket
//! state of the status section (`<tickets><ticket_state/>`); what they do is `crate::tickets`.

use super::{Ctx, Diagnostic, Element, diag, is_true};

/// One resource's dependency on a ticket: a plain `<rsc_ticket rsc=...>`, or one `resource_ref`
/// of a `<resource_set>` inside a `<rsc_ticket>` (then `id` is the set's id and `role` the set's
/// `role`, as Pacemaker names and reads them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RscTicket {
    /// The constraint's id, or the set's for a set member.
    pub id: String,
    /// The `<rsc_ticket>` element's id (the same as `id` for a plain constraint).
    pub constraint: String,
    /// The set's id for a set member (a missing resource in a set drops the constraint's
    /// remaining sets, as Pacemaker does).
    pub set: Option<String>,
    pub rsc: String,
    pub ticket: String,
    /// `rsc-role` (the set's `role` for a set member), as written.
    pub role: Option<String>,
    /// `loss-policy`, as written.
    pub loss_policy: Option<String>,
    pub line: usize,
}

/// A ticket's state from `<status><tickets><ticket_state>`; a ticket without one is revoked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TicketState {
    pub id: String,
    pub granted: bool,
    pub standby: bool,
    pub last_granted: Option<i64>,
    /// Every attribute but `id`, in document order (kept for `-O`).
    pub attrs: Vec<(String, String)>,
}

impl TicketState {
    /// Recomputes `granted`, `standby` and `last_granted` from `attrs`.
    pub fn refresh(&mut self) {
        let get = |name: &str| {
            self.attrs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        self.granted = get("granted").is_some_and(is_true);
        self.standby = get("standby").is_some_and(is_true);
        self.last_granted = get("last-granted").map(|v| leading_i64(v).unwrap_or(0));
    }
}

/// Sets a ticket's boolean attribute (`granted`, `standby`) to "true" or "false" as
/// crm_simulate's ticket injections write it, adding the ticket's state when it has none.
pub fn set_ticket_flag(tickets: &mut Vec<TicketState>, id: &str, name: &str, value: bool) {
    let pos = match tickets.iter().position(|t| t.id == id) {
        Some(pos) => pos,
        None => {
            tickets.push(TicketState {
                id: id.to_string(),
                ..Default::default()
            });
            tickets.len() - 1
        }
    };
    let state = &mut tickets[pos];
    let text = if value { "true" } else { "false" };
    match state.attrs.iter_mut().find(|(k, _)| k == name) {
        Some(slot) => slot.1 = text.to_string(),
        None => state.attrs.push((name.to_string(), text.to_string())),
    }
    state.refresh();
}

/// strtoll's reading: a leading integer, the rest ignored.
fn leading_i64(s: &str) -> Option<i64> {
    let t = s.trim();
    let sign_len = usize::from(t.starts_with(['+', '-']));
    let digits = t[sign_len..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .count();
    t[..sign_len + digits].parse().ok()
}

/// Reads `<rsc_ticket>` into one `RscTicket` per dependent resource. Unsupported forms (a
/// deprecated `rsc-instance`, `<resource_set>` without an id) and configuration errors that make
/// Pacemaker ignore the constraint (no id, no ticket, no resource) give a diagnostic naming the
/// element. A tag or template (as `rsc` or in a set) stands for its resources, in its order.
pub(super) fn parse_rsc_ticket(
    ctx: &Ctx,
    c: &Element,
    names: &super::sets::Names,
    out: &mut Vec<RscTicket>,
    diags: &mut Vec<Diagnostic>,
) {
    let id = c.id();
    if id.is_empty() {
        diag(diags, c, "rsc_ticket without id ignored");
        return;
    }
    let Some(ticket) = c.attr("ticket").filter(|t| !t.is_empty()) else {
        diag(diags, c, "rsc_ticket without ticket ignored");
        return;
    };
    if c.attr("rsc-instance").is_some() {
        diag(
            diags,
            c,
            "rsc_ticket with rsc-instance (clone instances) not supported, ignored",
        );
        return;
    }
    let loss_policy = c.attr("loss-policy").map(str::to_string);
    let sets: Vec<&Element> = c.children_named("resource_set").collect();
    if sets.is_empty() {
        let Some(rsc) = c.attr("rsc").filter(|r| !r.is_empty()) else {
            diag(diags, c, "rsc_ticket without rsc or resource_set ignored");
            return;
        };
        for rsc in expand_name(names, rsc) {
            out.push(RscTicket {
                id: id.to_string(),
                constraint: id.to_string(),
                set: None,
                rsc,
                ticket: ticket.to_string(),
                role: c.attr("rsc-role").map(str::to_string),
                loss_policy: loss_policy.clone(),
                line: c.line,
            });
        }
        return;
    }
    for set in sets {
        let set = ctx.resolve(set);
        let set_id = set.id();
        if set_id.is_empty() {
            // Pacemaker stops reading the constraint here; the sets before it stay.
            diag(
                diags,
                set,
                format!("resource_set without id in rsc_ticket {id}: the rest of {id} ignored"),
            );
            return;
        }
        for (r, rsc) in set
            .children_named("resource_ref")
            .flat_map(|r| expand_name(names, r.id()).into_iter().map(move |m| (r, m)))
        {
            out.push(RscTicket {
                id: set_id.to_string(),
                constraint: id.to_string(),
                set: Some(set_id.to_string()),
                rsc,
                ticket: ticket.to_string(),
                role: set.attr("role").map(str::to_string),
                loss_policy: loss_policy.clone(),
                line: r.line,
            });
        }
    }
}

/// The resources a name stands for: a tag's or template's (tags within tags followed), else the
/// name itself (an unknown name is reported by `check_references`).
fn expand_name(names: &super::sets::Names, id: &str) -> Vec<String> {
    let mut out = Vec::new();
    match super::sets::resolve_ref(names, id, &mut Vec::new(), &mut out) {
        Ok(()) if !out.is_empty() => out,
        _ => vec![id.to_string()],
    }
}

/// Reports every dependency naming no configured primitive or group (tags and templates are
/// expanded before: a clone, a bundle, or nothing at all): Pacemaker ignores those that name
/// nothing, and the others are not supported here. A set's missing resource also ends its constraint (`crate::tickets`).
pub(super) fn check_references(
    rsc_tickets: &[RscTicket],
    resources: &[super::ResourceDef],
    diags: &mut Vec<Diagnostic>,
) {
    let known = |id: &str| {
        resources.iter().any(|r| match r {
            super::ResourceDef::Primitive(p) => p.id == id,
            super::ResourceDef::Group(g) => g.id == id || g.members.iter().any(|m| m.id == id),
            super::ResourceDef::Clone(c) => c.id == id || c.child.id == id,
            // Tickets on bundles are not supported.
            super::ResourceDef::Bundle(_) => false,
        })
    };
    for dep in rsc_tickets.iter().filter(|d| !known(&d.rsc)) {
        let (element, id) = match dep.set {
            Some(_) => ("resource_ref", dep.rsc.clone()),
            None => ("rsc_ticket", dep.id.clone()),
        };
        diags.push(Diagnostic {
            element: element.into(),
            id,
            line: dep.line,
            message: format!(
                "rsc_ticket {}: {} is not a configured primitive or group (clones and \
                 bundles are not supported): ignored",
                dep.constraint, dep.rsc
            ),
        });
    }
}

/// Reads `<status><tickets>`: every `<ticket_state>` with an id; a second state of the same
/// ticket overrides the first attribute by attribute, as Pacemaker merges them.
pub(super) fn parse_ticket_states(tickets: &Element, out: &mut Vec<TicketState>) {
    for t in tickets.children_named("ticket_state") {
        let id = t.id();
        if id.is_empty() {
            continue;
        }
        let pos = match out.iter().position(|s| s.id == id) {
            Some(pos) => pos,
            None => {
                out.push(TicketState {
                    id: id.to_string(),
                    ..Default::default()
                });
                out.len() - 1
            }
        };
        let state = &mut out[pos];
        for (k, v) in t.attrs.iter().filter(|(k, _)| k != "id") {
            match state.attrs.iter_mut().find(|(name, _)| name == k) {
                Some(slot) => slot.1 = v.clone(),
                None => state.attrs.push((k.clone(), v.clone())),
            }
        }
        state.refresh();
    }
}

#[cfg(test)]
mod tests {
    use crate::cib::parse_cib;

    fn cib(constraints: &str, tickets: &str) -> crate::Cib {
        parse_cib(&format!(
            r#"<cib><configuration><crm_config/><nodes/><resources>
<primitive id="a" class="ocf" provider="pacemaker" type="Dummy"/>
<primitive id="b" class="ocf" provider="pacemaker" type="Dummy"/>
</resources><constraints>{constraints}</constraints></configuration>
<status>{tickets}</status></cib>"#
        ))
        .expect("valid CIB")
    }

    /// Pacemaker expands a tag named by rsc_ticket (as `rsc` or in a set) into the resources it
    /// tags, following tags within tags in order.
    #[test]
    fn a_tag_stands_for_its_resources_tags_within_tags_included() {
        let c = parse_cib(
            r#"<cib><configuration><crm_config/><nodes/><resources>
<primitive id="a" class="ocf" provider="pacemaker" type="Dummy"/>
<primitive id="b" class="ocf" provider="pacemaker" type="Dummy"/>
</resources><constraints>
<rsc_ticket id="t1" rsc="outer" ticket="T"/>
<rsc_ticket id="t2" ticket="U"><resource_set id="s"><resource_ref id="inner"/></resource_set></rsc_ticket>
</constraints><tags>
<tag id="inner"><obj_ref id="a"/></tag>
<tag id="outer"><obj_ref id="inner"/><obj_ref id="b"/></tag>
</tags></configuration><status/></cib>"#,
        )
        .expect("valid CIB");
        let deps: Vec<(&str, &str)> = c
            .rsc_tickets
            .iter()
            .map(|t| (t.ticket.as_str(), t.rsc.as_str()))
            .collect();
        assert_eq!(deps, [("T", "a"), ("T", "b"), ("U", "a")]);
        assert!(c.diagnostics.is_empty(), "{:?}", c.diagnostics);
    }

    #[test]
    fn plain_rsc_ticket_is_read_as_written() {
        let c = cib(
            r#"<rsc_ticket id="t1" rsc="a" rsc-role="Started" ticket="T" loss-policy="fence"/>"#,
            "",
        );
        assert_eq!(c.rsc_tickets.len(), 1);
        let t = &c.rsc_tickets[0];
        assert_eq!(t.constraint, "t1");
        assert_eq!(t.set, None);
        assert_eq!(
            (t.id.as_str(), t.rsc.as_str(), t.ticket.as_str()),
            ("t1", "a", "T")
        );
        assert_eq!(t.role.as_deref(), Some("Started"));
        assert_eq!(t.loss_policy.as_deref(), Some("fence"));
        assert!(c.diagnostics.is_empty(), "{:?}", c.diagnostics);
    }

    #[test]
    fn each_resource_of_each_set_depends_on_the_ticket_under_the_sets_id_and_role() {
        let c = cib(
            r#"<rsc_ticket id="t1" ticket="T" loss-policy="stop">
<resource_set id="s1" role="Started"><resource_ref id="a"/><resource_ref id="b"/></resource_set>
<resource_set id="s2"><resource_ref id="a"/></resource_set></rsc_ticket>"#,
            "",
        );
        let got: Vec<(&str, &str, Option<&str>)> = c
            .rsc_tickets
            .iter()
            .map(|t| (t.id.as_str(), t.rsc.as_str(), t.role.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("s1", "a", Some("Started")),
                ("s1", "b", Some("Started")),
                ("s2", "a", None)
            ]
        );
        assert!(c.rsc_tickets.iter().all(|t| t.constraint == "t1"));
    }

    #[test]
    fn rsc_ticket_without_ticket_or_rsc_is_ignored_with_a_diagnostic() {
        let c = cib(
            r#"<rsc_ticket id="t1" rsc="a"/>
<rsc_ticket id="t2" ticket="T"/>
<rsc_ticket id="t3" rsc="a" ticket="T" rsc-instance="1"/>"#,
            "",
        );
        assert!(c.rsc_tickets.is_empty());
        let ids: Vec<&str> = c.diagnostics.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["t1", "t2", "t3"]);
        assert!(c.diagnostics.iter().all(|d| d.element == "rsc_ticket"));
    }

    #[test]
    fn a_dependency_on_an_unknown_resource_or_tag_is_reported() {
        let c = cib(
            r#"<rsc_ticket id="t1" rsc="tag1" ticket="T"/>
<rsc_ticket id="t2" ticket="T"><resource_set id="s"><resource_ref id="a"/><resource_ref id="c"/></resource_set></rsc_ticket>"#,
            "",
        );
        let got: Vec<(&str, &str, usize)> = c
            .diagnostics
            .iter()
            .map(|d| (d.element.as_str(), d.id.as_str(), d.line))
            .collect();
        assert_eq!(got, [("rsc_ticket", "t1", 4), ("resource_ref", "c", 5)]);
    }

    #[test]
    fn ticket_state_is_granted_only_when_true_and_later_states_override() {
        let c = cib(
            "",
            r#"<tickets><ticket_state id="A" granted="true" last-granted="1341984000"/>
<ticket_state id="B" granted="no" standby="yes"/><ticket_state id="C"/>
<ticket_state id="A" standby="true"/></tickets>"#,
        );
        let a = &c.tickets[0];
        assert_eq!(a.id, "A");
        assert!(a.granted && a.standby);
        assert_eq!(a.last_granted, Some(1_341_984_000));
        let b = &c.tickets[1];
        assert!(!b.granted && b.standby);
        let cc = &c.tickets[2];
        assert!(!cc.granted && !cc.standby && cc.last_granted.is_none());
        assert_eq!(c.tickets.len(), 3);
    }
}
