//! Guest nodes in the configuration: a primitive (top level or in a group) whose meta-attributes
//! name a `remote-node` gets an implicit Pacemaker Remote connection, as Pacemaker 2.1.5 adds one
//! before unpacking resources (`expand_remote_rsc_meta`).
//!
//! The connection is an `ocf:pacemaker:remote` primitive named after the guest node, appended
//! after the configured resources, with meta `internal_rsc=true` (not printed), `container` = the
//! guest's primitive, `allow-migrate` from `remote-allow-migrate` and `is-managed` from the
//! container's; parameters `addr` (`remote-addr`) and `port` (`remote-port`) when given; a
//! monitor every 30s (timeout 30s) and a start whose timeout is `remote-connect-timeout` (60s by
//! default). `crate::remote` then makes the node, `crate::guest` what differs for a guest.

use super::bundles::implicit_op;
use super::{NvSet, Primitive, ResourceDef};

/// The meta-attribute that makes a primitive a guest node's container.
pub const REMOTE_NODE: &str = "remote-node";

fn meta_value<'p>(p: &'p Primitive, name: &str) -> Option<&'p str> {
    p.meta
        .iter()
        .flat_map(|s| s.pairs.iter())
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The implicit connection of `container`'s guest node, if it names one.
pub fn connection_of(container: &Primitive) -> Option<Primitive> {
    let guest = meta_value(container, REMOTE_NODE)?.to_string();
    let mut meta = vec![
        ("internal_rsc".to_string(), "true".to_string()),
        ("container".to_string(), container.id.clone()),
    ];
    if let Some(v) = meta_value(container, "remote-allow-migrate") {
        meta.push(("allow-migrate".into(), v.to_string()));
    }
    if let Some(v) = meta_value(container, "is-managed") {
        meta.push(("is-managed".into(), v.to_string()));
    }
    let mut params = Vec::new();
    if let Some(v) = meta_value(container, "remote-addr") {
        params.push(("addr".to_string(), v.to_string()));
    }
    if let Some(v) = meta_value(container, "remote-port") {
        params.push(("port".to_string(), v.to_string()));
    }
    let timeout = meta_value(container, "remote-connect-timeout").unwrap_or("60s");
    let sets = |suffix: &str, pairs: Vec<(String, String)>| {
        if pairs.is_empty() {
            Vec::new()
        } else {
            vec![NvSet {
                id: format!("{guest}-{suffix}"),
                pairs,
                ..Default::default()
            }]
        }
    };
    Some(Primitive {
        id: guest.clone(),
        class: "ocf".into(),
        provider: Some("pacemaker".into()),
        kind: "remote".into(),
        meta: sets("meta_attributes", meta),
        params: sets("instance_attributes", params),
        utilization: Vec::new(),
        ops: vec![
            implicit_op(&guest, "monitor", "30s", Some("30s")),
            implicit_op(&guest, "start", "0", Some(timeout)),
        ],
        line: container.line,
    })
}

/// The connections of every guest node among `resources` (top-level primitives and group
/// members, in configuration order), skipping a name already used by a resource.
pub fn connections(resources: &[ResourceDef]) -> Vec<Primitive> {
    let mut out: Vec<Primitive> = Vec::new();
    let candidates = resources.iter().flat_map(|r| match r {
        ResourceDef::Primitive(p) => std::slice::from_ref(p).iter(),
        ResourceDef::Group(g) => g.members.iter(),
        ResourceDef::Clone(_) | ResourceDef::Bundle(_) => [].iter(),
    });
    for p in candidates {
        let Some(c) = connection_of(p) else {
            continue;
        };
        let taken = resources.iter().any(|r| {
            r.id() == c.id
                || matches!(r, ResourceDef::Group(g) if g.members.iter().any(|m| m.id == c.id))
        }) || out.iter().any(|o| o.id == c.id);
        if !taken {
            out.push(c);
        }
    }
    out
}

/// The guest node names configured under `<resources>` (for constraints naming a connection).
pub fn names(resources: &super::Element) -> Vec<String> {
    let mut out = Vec::new();
    let mut candidates: Vec<&super::Element> = Vec::new();
    for r in &resources.children {
        match r.name.as_str() {
            "primitive" => candidates.push(r),
            "group" => candidates.extend(r.children_named("primitive")),
            _ => {}
        }
    }
    for p in candidates {
        for m in p.children_named("meta_attributes") {
            for nv in m.children_named("nvpair") {
                if nv
                    .attr("name")
                    .is_some_and(|n| n.eq_ignore_ascii_case(REMOTE_NODE))
                {
                    if let Some(v) = nv.attr("value") {
                        out.push(v.to_string());
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(meta: &[(&str, &str)]) -> Primitive {
        Primitive {
            id: "vm1".into(),
            class: "ocf".into(),
            provider: Some("heartbeat".into()),
            kind: "VirtualDomain".into(),
            meta: vec![NvSet {
                id: "vm1-meta".into(),
                pairs: meta
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_remote_node_meta_attribute_makes_a_connection_inside_the_container() {
        let c = connection_of(&container(&[
            ("remote-node", "guest1"),
            ("remote-port", "3121"),
            ("remote-connect-timeout", "20s"),
        ]))
        .expect("a connection");
        assert_eq!(c.id, "guest1");
        assert_eq!(
            (c.class.as_str(), c.provider.as_deref(), c.kind.as_str()),
            ("ocf", Some("pacemaker"), "remote")
        );
        let meta = &c.meta[0].pairs;
        assert!(meta.contains(&("container".into(), "vm1".into())));
        assert!(meta.contains(&("internal_rsc".into(), "true".into())));
        assert_eq!(c.params[0].pairs, vec![("port".into(), "3121".into())]);
        let start = c.ops.iter().find(|o| o.name == "start").expect("start op");
        assert_eq!(start.attrs.get("timeout").map(String::as_str), Some("20s"));
        let monitor = c.ops.iter().find(|o| o.name == "monitor").expect("monitor");
        assert_eq!(monitor.interval_ms, 30_000);
    }

    #[test]
    fn no_remote_node_no_connection_and_a_taken_name_is_skipped() {
        assert!(connection_of(&container(&[("target-role", "Stopped")])).is_none());
        let mut taken = container(&[("remote-node", "vm1")]);
        taken.id = "vm1".into();
        assert!(connections(&[ResourceDef::Primitive(taken)]).is_empty());
    }
}
