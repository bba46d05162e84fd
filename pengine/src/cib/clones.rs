//! `<clone>` (and legacy `<master>`) elements -> `CloneDef`: clones of one primitive or of a
//! group, anonymous or globally unique, promotable or not.

use super::{Element, Group, NvSet, Primitive};

/// A clone of a primitive or group: its own meta attributes (the clone's options, and what its
/// instances inherit, such as `target-role` and `is-managed`) and the cloned primitive.
#[derive(Debug, Clone, Default)]
pub struct CloneDef {
    pub id: String,
    pub meta: Vec<NvSet>,
    pub child: Primitive,
    /// Set for a clone of a group: the cloned group (`child` is then unused).
    pub group: Option<Group>,
    pub line: usize,
    /// A `<master>` element (always promotable, whatever its meta attributes say).
    pub legacy_master: bool,
}

/// The most instances a clone may declare (`clone-max`); Pacemaker has no limit, real clusters
/// stay far below it.
pub const MAX_INSTANCES: i64 = 4096;

/// The value a clone's own meta attributes give `name` (the first set that has it; rules are
/// not looked at here: this only decides whether the clone is supported).
fn plain_meta<'a>(meta: &'a [NvSet], name: &str) -> Option<&'a str> {
    meta.iter()
        .filter(|s| s.rules.is_empty())
        .flat_map(|s| s.pairs.iter())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Whether agents of standard `class` may be globally unique clones (Pacemaker 2.1.5's
/// `pcmk_ra_cap_unique`: OCF and fencing); a clone of others is forced anonymous.
pub fn supports_unique(class: &str) -> bool {
    class.eq_ignore_ascii_case("ocf") || class.eq_ignore_ascii_case("stonith")
}

/// Reads a `<clone>`: `Ok(None)` when its primitive is ignored (a template that cannot be used;
/// the error is the caller's), `Err(reason)` for what is not supported yet.
pub(super) fn parse(
    el: &Element,
    mut primitive: impl FnMut(&Element) -> Option<Primitive>,
    meta_sets: impl Fn(&Element) -> Vec<NvSet>,
) -> Result<Option<CloneDef>, String> {
    let meta = meta_sets(el);
    // Every instance is a resource: an absurd clone-max would exhaust memory.
    if let Some(max) = plain_meta(&meta, "clone-max").and_then(|v| v.trim().parse::<i64>().ok()) {
        if max > MAX_INSTANCES {
            return Err(format!(
                "clone-max {max} is above {MAX_INSTANCES} instances: clone ignored"
            ));
        }
    }
    let mut children = el
        .children
        .iter()
        .filter(|c| matches!(c.name.as_str(), "primitive" | "group"));
    let Some(child) = children.next() else {
        return Err("clone without a primitive or group ignored".into());
    };
    if children.next().is_some() {
        return Err("clone with more than one child ignored".into());
    }
    if child.name == "group" {
        let members: Vec<Primitive> = child
            .children_named("primitive")
            .filter_map(&mut primitive)
            .collect();
        if members.is_empty() {
            return Err("clone of an empty group ignored".into());
        }
        return Ok(Some(CloneDef {
            id: el.id().to_string(),
            meta,
            child: Primitive::default(),
            group: Some(Group {
                id: child.id().to_string(),
                meta: meta_sets(child),
                members,
                line: child.line,
            }),
            line: el.line,
            legacy_master: el.name == "master",
        }));
    }
    Ok(primitive(child).map(|child| CloneDef {
        id: el.id().to_string(),
        meta,
        child,
        group: None,
        line: el.line,
        legacy_master: el.name == "master",
    }))
}
