//! Feature families: which Pacemaker features a case's CIB uses, found by scanning its XML
//! (element names, a few attributes and meta-attributes, the operation history). A case belongs
//! to every family whose feature it uses.

use quick_xml::events::{BytesStart, Event};
use std::collections::BTreeSet;

/// One feature family. The order is the report's row order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    /// Only primitives: none of the structures below (groups, clones, bundles, remote or guest
    /// nodes, tickets, templates, tags, resource sets).
    Primitives,
    /// Groups, with no clone, bundle, remote or guest node, ticket, template, tag or set.
    Groups,
    /// `allow-migrate` set, or `migrate_to`/`migrate_from` in the operation history.
    Migration,
    /// A stonith-class resource or a fencing topology.
    Fencing,
    /// `utilization` elements or a `placement-strategy`.
    Utilization,
    /// `rule` elements (in constraints or attribute sets).
    Rules,
    /// Date expressions in rules.
    Dates,
    /// Colocation constraints.
    Colocation,
    /// Ordering constraints.
    Order,
    /// Failed operations in the history (rc not 0, 7 or 8, or a failed execution status).
    FailedOps,
    /// `is-managed=false`, maintenance mode, or standby nodes.
    Unmanaged,
    /// Any group (also inside clones or bundles).
    AnyGroup,
    Clones,
    /// Promotable clones (`master` or `promotable=true`).
    Promotable,
    Bundles,
    /// Pacemaker Remote nodes (`ocf:pacemaker:remote` connections or remote node entries).
    Remote,
    /// Guest nodes (`remote-node` meta-attribute).
    Guest,
    Tickets,
    Templates,
    Tags,
    ResourceSets,
}

impl Family {
    pub const ALL: [Family; 21] = [
        Family::Primitives,
        Family::Groups,
        Family::Migration,
        Family::Fencing,
        Family::Utilization,
        Family::Rules,
        Family::Dates,
        Family::Colocation,
        Family::Order,
        Family::FailedOps,
        Family::Unmanaged,
        Family::AnyGroup,
        Family::Clones,
        Family::Promotable,
        Family::Bundles,
        Family::Remote,
        Family::Guest,
        Family::Tickets,
        Family::Templates,
        Family::Tags,
        Family::ResourceSets,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Family::Primitives => "primitives-only",
            Family::Groups => "groups",
            Family::Migration => "migration",
            Family::Fencing => "fencing",
            Family::Utilization => "utilization",
            Family::Rules => "rules",
            Family::Dates => "dates",
            Family::Colocation => "colocation",
            Family::Order => "order",
            Family::FailedOps => "failed-ops",
            Family::Unmanaged => "unmanaged/standby",
            Family::AnyGroup => "any-group",
            Family::Clones => "clones",
            Family::Promotable => "promotable",
            Family::Bundles => "bundles",
            Family::Remote => "remote",
            Family::Guest => "guest",
            Family::Tickets => "tickets",
            Family::Templates => "templates",
            Family::Tags => "tags",
            Family::ResourceSets => "resource-sets",
        }
    }

    pub fn from_name(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The structures that put a case outside issue 5's target (primitives and groups only).
    const OUTSIDE_TARGET: [Family; 9] = [
        Family::Clones,
        Family::Promotable,
        Family::Bundles,
        Family::Remote,
        Family::Guest,
        Family::Tickets,
        Family::Templates,
        Family::Tags,
        Family::ResourceSets,
    ];
}

/// Whether a case's families put it in issue 5's target: only primitives and groups.
pub fn in_target(families: &BTreeSet<Family>) -> bool {
    families.contains(&Family::Primitives) || families.contains(&Family::Groups)
}

fn is_true(value: &str) -> bool {
    matches!(
        value.to_ascii_lowercase().as_str(),
        "true" | "on" | "yes" | "y" | "1"
    )
}

fn attr(start: &BytesStart<'_>, key: &str) -> Option<String> {
    start
        .try_get_attribute(key)
        .ok()
        .flatten()
        .and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()))
}

/// Scans a CIB and returns the families it belongs to.
pub fn classify(cib: &str) -> Result<BTreeSet<Family>, String> {
    let mut found = BTreeSet::new();
    let mut stack: Vec<String> = Vec::new();
    let mut reader = quick_xml::Reader::from_str(cib);
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("XML error at byte {}: {e}", reader.buffer_position()))?;
        let (start, empty) = match &event {
            Event::Start(s) => (s, false),
            Event::Empty(s) => (s, true),
            Event::End(_) => {
                stack.pop();
                continue;
            }
            Event::Eof => break,
            _ => continue,
        };
        let name = String::from_utf8_lossy(start.name().as_ref()).into_owned();
        let parent = |n: usize| stack.iter().rev().nth(n).map(String::as_str);
        match name.as_str() {
            "group" => {
                found.insert(Family::AnyGroup);
            }
            "clone" => {
                found.insert(Family::Clones);
            }
            "master" => {
                found.extend([Family::Clones, Family::Promotable]);
            }
            "bundle" => {
                found.insert(Family::Bundles);
            }
            "rsc_ticket" | "ticket_state" => {
                found.insert(Family::Tickets);
            }
            "template" => {
                found.insert(Family::Templates);
            }
            "tags" | "tag" => {
                found.insert(Family::Tags);
            }
            "resource_set" => {
                found.insert(Family::ResourceSets);
            }
            "rsc_colocation" => {
                found.insert(Family::Colocation);
            }
            "rsc_order" => {
                found.insert(Family::Order);
            }
            "utilization" => {
                found.insert(Family::Utilization);
            }
            "rule" => {
                found.insert(Family::Rules);
            }
            "date_expression" => {
                found.insert(Family::Dates);
            }
            "fencing-topology" | "fencing-level" => {
                found.insert(Family::Fencing);
            }
            "primitive" => {
                if attr(start, "template").is_some() {
                    found.insert(Family::Templates);
                }
                let class = attr(start, "class").unwrap_or_default();
                if class == "stonith" {
                    found.insert(Family::Fencing);
                }
                if class == "ocf"
                    && attr(start, "provider").as_deref() == Some("pacemaker")
                    && attr(start, "type").as_deref() == Some("remote")
                {
                    found.insert(Family::Remote);
                }
            }
            "node"
                if parent(0) == Some("nodes")
                    && attr(start, "type").as_deref() == Some("remote") =>
            {
                found.insert(Family::Remote);
            }
            "node_state" if attr(start, "remote_node").as_deref().is_some_and(is_true) => {
                found.insert(Family::Remote);
            }
            "lrm_rsc_op" => {
                let operation = attr(start, "operation").unwrap_or_default();
                if operation == "migrate_to" || operation == "migrate_from" {
                    found.insert(Family::Migration);
                }
                let rc = attr(start, "rc-code").unwrap_or_default();
                let status = attr(start, "op-status").unwrap_or_default();
                let pending = status == "-1";
                let failed_rc = !matches!(rc.as_str(), "" | "0" | "7" | "8");
                let failed_status = !matches!(status.as_str(), "" | "0" | "-1");
                if !pending && (failed_rc || failed_status) {
                    found.insert(Family::FailedOps);
                }
            }
            "nvpair" => {
                let key = attr(start, "name").unwrap_or_default();
                let value = attr(start, "value").unwrap_or_default();
                match key.as_str() {
                    "allow-migrate" if is_true(&value) => {
                        found.insert(Family::Migration);
                    }
                    "promotable" if is_true(&value) && parent(1) == Some("clone") => {
                        found.insert(Family::Promotable);
                    }
                    "remote-node" if !value.is_empty() => {
                        found.insert(Family::Guest);
                    }
                    "placement-strategy" if value != "default" => {
                        found.insert(Family::Utilization);
                    }
                    "is-managed" if !is_true(&value) => {
                        found.insert(Family::Unmanaged);
                    }
                    "maintenance-mode" | "maintenance" | "standby" if is_true(&value) => {
                        found.insert(Family::Unmanaged);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        if !empty {
            stack.push(name);
        }
    }
    if !Family::OUTSIDE_TARGET.iter().any(|f| found.contains(f)) {
        found.insert(if found.contains(&Family::AnyGroup) {
            Family::Groups
        } else {
            Family::Primitives
        });
    }
    Ok(found)
}
