//! Resource sets, tags and templates in constraints: an `rsc_location`, `rsc_colocation` or
//! `rsc_order` that holds `<resource_set>`s, or names a tag or template, becomes the pairwise
//! constraints Pacemaker 2.1.5's scheduler derives from it (facts from its constraint unpacking).
//!
//! - Tags and templates in a set's `resource_ref`s are replaced in place by the resources they
//!   stand for (tagged ids in tag order; primitives made from a template in configuration order).
//!   A tag or template named directly (`rsc`, `with-rsc`, `first`, `then`) becomes a set of its
//!   resources with `sequential=false`, the other end (if a plain resource) a one-member set; the
//!   role or action moves into the set. Two tags or templates in one colocation are refused.
//! - Location: every member of every set gets the constraint's node/score/rules, with the set's
//!   `score` and `role` in place of the constraint's when given.
//! - Colocation, in a set (unless `sequential=false`; score: the set's, else the constraint's; 0
//!   means none): a positive score colocates each member with the one before it
//!   (`ordering=listed`: each with the one after it); a negative score colocates each member with
//!   every member before it. Between consecutive sets (constraint score): the first member of the
//!   earlier set (every member when it has `sequential=false`) with the last member of the later
//!   set (every member when `sequential=false`). Set colocations carry the set's id, those between
//!   sets the constraint's, and the set's `role` on both ends.
//! - Order, in a set (action: the set's `action`, default start; kind: the set's, else the
//!   constraint's): `kind=Serialize` orders each member before every later one; otherwise a
//!   sequential set (the default) chains each member after the one before it, symmetrical unless
//!   the set or the constraint says otherwise. Between consecutive sets (the constraint's kind and
//!   symmetry): the earlier set's last member (every member unless it says `sequential=true`)
//!   before the later set's first member (every member unless `sequential=true`), each pair
//!   symmetrical like the constraint. `require-all=false` on a set followed by another (its action
//!   a start) orders every member of it before every member of the next through Pacemaker's
//!   `one-or-more:<set id>` pseudo action (`OneOrMore::Set`, see `crate::one_or_more`); the
//!   inverse keeps the ordinary pairs. With another action it is refused with a diagnostic.
//!
//! A constraint that names something that is neither a resource nor a tag or template with
//! resources is ignored, as Pacemaker ignores it, with a `Cib::config_errors` entry; what is not
//! supported (require-all=false on promotes, tags in a loop) is ignored with a diagnostic.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    Cib, Colocation, Ctx, Diagnostic, Element, Location, OneOrMore, Order, diag, is_true,
    parse_score,
};

/// The elements a tag may refer to are resolved against these.
const RESOURCE_ELEMENTS: [&str; 5] = ["primitive", "group", "clone", "master", "bundle"];

/// What a constraint may name: resources, templates and tags.
#[derive(Debug, Clone, Default)]
pub(crate) struct Names {
    /// Ids of every resource element under `<resources>`, at any depth (templates excluded).
    pub resources: BTreeSet<String>,
    /// Template id -> the primitives made from it, in configuration order.
    pub templates: BTreeMap<String, Vec<String>>,
    /// Tag id -> the ids it references, in order, each once.
    pub tags: BTreeMap<String, Vec<String>>,
}

impl Names {
    /// Reads resource, template and tag ids from a `<configuration>` element.
    pub(crate) fn from_configuration(config: &Element) -> Names {
        let mut names = Names::default();
        for resources in config.children_named("resources") {
            for t in resources.children_named("template") {
                names.templates.entry(t.id().to_string()).or_default();
            }
            names.walk_resources(resources);
        }
        for tags in config.children_named("tags") {
            for tag in tags.children_named("tag") {
                if tag.id().is_empty() {
                    continue;
                }
                for r in tag.children_named("obj_ref") {
                    if r.id().is_empty() {
                        continue;
                    }
                    let refs = names.tags.entry(tag.id().to_string()).or_default();
                    if !refs.iter().any(|x| x == r.id()) {
                        refs.push(r.id().to_string());
                    }
                }
            }
        }
        names
    }

    fn walk_resources(&mut self, el: &Element) {
        for c in &el.children {
            if !RESOURCE_ELEMENTS.contains(&c.name.as_str()) || c.id().is_empty() {
                continue;
            }
            self.resources.insert(c.id().to_string());
            if let Some(t) = c.attr("template") {
                if t != c.id() {
                    if let Some(members) = self.templates.get_mut(t) {
                        if !members.iter().any(|m| m == c.id()) {
                            members.push(c.id().to_string());
                        }
                    }
                }
            }
            self.walk_resources(c);
        }
    }

    /// The resources a template or tag stands for (`None`: not a template or tag, or one with
    /// no resources).
    pub(crate) fn group_of(&self, id: &str) -> Option<&[String]> {
        self.templates
            .get(id)
            .or_else(|| self.tags.get(id))
            .map(Vec::as_slice)
            .filter(|m| !m.is_empty())
    }

    pub(crate) fn is_tag_or_template(&self, id: &str) -> bool {
        !self.resources.contains(id)
            && (self.templates.contains_key(id) || self.tags.contains_key(id))
    }
}

/// A `resource_set` with its references resolved to resources.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RscSet {
    pub id: String,
    pub members: Vec<String>,
    pub sequential: Option<String>,
    pub require_all: Option<String>,
    pub role: Option<String>,
    pub action: Option<String>,
    pub kind: Option<String>,
    pub score: Option<String>,
    pub symmetrical: Option<String>,
    pub ordering: Option<String>,
}

impl RscSet {
    fn from_element(el: &Element, members: Vec<String>) -> RscSet {
        let attr = |n: &str| el.attr(n).map(str::to_string);
        RscSet {
            id: el.id().to_string(),
            members,
            sequential: attr("sequential"),
            require_all: attr("require-all"),
            role: attr("role"),
            action: attr("action"),
            kind: attr("kind"),
            score: attr("score"),
            symmetrical: attr("symmetrical"),
            ordering: attr("ordering"),
        }
    }

    /// The set Pacemaker makes of a tag or template named directly by a constraint.
    fn of_tag(id: &str, members: &[String]) -> RscSet {
        RscSet {
            id: id.to_string(),
            members: members.to_vec(),
            sequential: Some("false".into()),
            ..Default::default()
        }
    }

    /// The one-member set Pacemaker makes of a plain resource opposite a tag.
    fn of_resource(id: &str) -> RscSet {
        RscSet {
            id: id.to_string(),
            members: vec![id.to_string()],
            ..Default::default()
        }
    }
}

/// Pacemaker's strict boolean: `None` when absent or not a boolean word.
pub(crate) fn parse_bool(s: Option<&str>) -> Option<bool> {
    match s?.trim().to_ascii_lowercase().as_str() {
        "true" | "on" | "yes" | "y" | "1" => Some(true),
        "false" | "off" | "no" | "n" | "0" => Some(false),
        _ => None,
    }
}

/// Why a constraint with sets, tags or templates is not expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SetError {
    /// A reference that is neither a resource nor a tag or template with resources.
    Unknown(String),
    /// Tags referring to each other in a loop.
    TagLoop(String),
    /// A colocation between two tags or templates.
    TwoTags,
    /// `require-all=false` on a set followed by another set whose action is neither start,
    /// stop nor demote (a one-or-more ordering of promotes), not supported.
    RequireAll(String),
}

impl std::fmt::Display for SetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetError::Unknown(id) => write!(
                f,
                "'{id}' is not a resource, nor a tag or template with resources: constraint ignored"
            ),
            SetError::TagLoop(id) => write!(f, "tag '{id}' refers to itself: constraint ignored"),
            SetError::TwoTags => {
                write!(
                    f,
                    "two templates or tags cannot be colocated: constraint ignored"
                )
            }
            SetError::RequireAll(set) => write!(
                f,
                "resource_set '{set}' with require-all=false before another set (one-or-more \
                 ordering) is only supported for starts: constraint ignored"
            ),
        }
    }
}

/// Resolves one `resource_ref` id into resources, tags and templates replaced in place (a tag
/// listed by a tag is expanded too, as Pacemaker revisits the references it inserts).
pub(crate) fn resolve_ref(
    names: &Names,
    id: &str,
    path: &mut Vec<String>,
    out: &mut Vec<String>,
) -> Result<(), SetError> {
    if names.resources.contains(id) {
        out.push(id.to_string());
        return Ok(());
    }
    let Some(members) = names.group_of(id) else {
        return Err(SetError::Unknown(id.to_string()));
    };
    if path.iter().any(|p| p == id) {
        return Err(SetError::TagLoop(id.to_string()));
    }
    path.push(id.to_string());
    for m in members {
        resolve_ref(names, m, path, out)?;
    }
    path.pop();
    Ok(())
}

/// The constraint's `resource_set` children, id-refs followed and references resolved (also for
/// `rsc_ticket`, which Pacemaker expands the same way).
pub(crate) fn read_sets(ctx: &Ctx, c: &Element, names: &Names) -> Result<Vec<RscSet>, SetError> {
    let mut sets = Vec::new();
    for s in c.children_named("resource_set") {
        let s = ctx.resolve(s);
        let mut members = Vec::new();
        for r in s.children_named("resource_ref") {
            resolve_ref(names, r.id(), &mut Vec::new(), &mut members)?;
        }
        sets.push(RscSet::from_element(s, members));
    }
    Ok(sets)
}

/// A constraint end naming a tag or template, as the set Pacemaker makes of it; a plain resource
/// as a one-member set when `convert_resource`; `Ok(None)` otherwise (`rsc_ticket`'s `rsc` is
/// converted with `convert_resource` false, as for `rsc_location`).
pub(crate) fn end_as_set(
    names: &Names,
    id: Option<&str>,
    convert_resource: bool,
) -> Result<Option<RscSet>, SetError> {
    let Some(id) = id else {
        return Ok(None);
    };
    if names.is_tag_or_template(id) {
        return match names.group_of(id) {
            Some(members) => Ok(Some(RscSet::of_tag(id, members))),
            None => Err(SetError::Unknown(id.to_string())),
        };
    }
    if convert_resource && names.resources.contains(id) {
        return Ok(Some(RscSet::of_resource(id)));
    }
    Ok(None)
}

/// Expands `c` into `cib` when it holds resource sets or names a tag or template (`true`: done,
/// possibly refused with a diagnostic); `false` for a plain constraint, left to the caller.
pub(super) fn expand(
    ctx: &Ctx,
    c: &Element,
    names: &Names,
    cib: &mut Cib,
    diags: &mut Vec<Diagnostic>,
    config_errors: &mut Vec<Diagnostic>,
) -> bool {
    let result = match c.name.as_str() {
        "rsc_location" => location_sets(ctx, c, names).map(|s| {
            s.map(|sets| {
                let rules: Vec<Element> = c
                    .children_named("rule")
                    .map(|r| ctx.resolve(r).clone())
                    .collect();
                cib.locations.extend(locations(c, &sets, &rules));
            })
        }),
        "rsc_colocation" => colocation_sets(ctx, c, names).map(|s| {
            s.map(|sets| {
                let score = c.attr("score").and_then(parse_score).unwrap_or(0);
                let influence = c.attr("influence").and_then(super::parse_boolean);
                cib.colocations
                    .extend(colocations(c.id(), score, influence, &sets));
            })
        }),
        "rsc_order" => order_sets(ctx, c, names).and_then(|s| match s {
            Some(sets) => orders(c, &sets).map(|o| {
                cib.orders.extend(o);
                Some(())
            }),
            None => Ok(None),
        }),
        _ => Ok(None),
    };
    match result {
        Ok(Some(())) => true,
        Ok(None) => false,
        Err(e) => {
            let unsupported = matches!(e, SetError::RequireAll(_) | SetError::TagLoop(_));
            diag(
                if unsupported { diags } else { config_errors },
                c,
                e.to_string(),
            );
            true
        }
    }
}

fn location_sets(ctx: &Ctx, c: &Element, names: &Names) -> Result<Option<Vec<RscSet>>, SetError> {
    if c.child("resource_set").is_some() {
        return read_sets(ctx, c, names).map(Some);
    }
    Ok(end_as_set(names, c.attr("rsc"), false)?.map(|mut set| {
        set.role = c.attr("role").map(str::to_string);
        vec![set]
    }))
}

fn colocation_sets(ctx: &Ctx, c: &Element, names: &Names) -> Result<Option<Vec<RscSet>>, SetError> {
    if c.child("resource_set").is_some() {
        return read_sets(ctx, c, names).map(Some);
    }
    let (Some(rsc), Some(with)) = (c.attr("rsc"), c.attr("with-rsc")) else {
        return Ok(None);
    };
    if !names.is_tag_or_template(rsc) && !names.is_tag_or_template(with) {
        return Ok(None);
    }
    if names.is_tag_or_template(rsc) && names.is_tag_or_template(with) {
        return Err(SetError::TwoTags);
    }
    let mut sets = Vec::new();
    for (end, role) in [(rsc, "rsc-role"), (with, "with-rsc-role")] {
        match end_as_set(names, Some(end), true)? {
            Some(mut set) => {
                set.role = c.attr(role).map(str::to_string);
                sets.push(set);
            }
            None => return Err(SetError::Unknown(end.to_string())),
        }
    }
    Ok(Some(sets))
}

fn order_sets(ctx: &Ctx, c: &Element, names: &Names) -> Result<Option<Vec<RscSet>>, SetError> {
    if c.child("resource_set").is_some() {
        return read_sets(ctx, c, names).map(Some);
    }
    let (Some(first), Some(then)) = (c.attr("first"), c.attr("then")) else {
        return Ok(None);
    };
    if !names.is_tag_or_template(first) && !names.is_tag_or_template(then) {
        return Ok(None);
    }
    let mut sets = Vec::new();
    for (end, action) in [(first, "first-action"), (then, "then-action")] {
        match end_as_set(names, Some(end), true)? {
            Some(mut set) => {
                set.action = c.attr(action).map(str::to_string);
                sets.push(set);
            }
            None => return Err(SetError::Unknown(end.to_string())),
        }
    }
    Ok(Some(sets))
}

/// Location constraints for every member of every set.
pub(crate) fn locations(c: &Element, sets: &[RscSet], rules: &[Element]) -> Vec<Location> {
    let mut out = Vec::new();
    for set in sets {
        for m in &set.members {
            out.push(Location {
                id: c.id().to_string(),
                rsc: m.clone(),
                node: c.attr("node").map(str::to_string),
                score: set
                    .score
                    .clone()
                    .or_else(|| c.attr("score").map(str::to_string)),
                role: set
                    .role
                    .clone()
                    .or_else(|| c.attr("role").map(str::to_string)),
                rules: rules.to_vec(),
                discovery: c.attr("resource-discovery").map(str::to_string),
            });
        }
    }
    out
}

/// Colocations within and between sets (module doc).
pub(crate) fn colocations(
    id: &str,
    score: i64,
    influence: Option<bool>,
    sets: &[RscSet],
) -> Vec<Colocation> {
    let new =
        |id: &str, score: i64, rsc: &str, with: &str, roles: (&Option<String>, &Option<String>)| {
            Colocation {
                id: id.to_string(),
                rsc: rsc.to_string(),
                with_rsc: with.to_string(),
                score,
                rsc_role: roles.0.clone(),
                with_rsc_role: roles.1.clone(),
                influence,
                node_attribute: None,
            }
        };
    let mut out = Vec::new();
    for (i, set) in sets.iter().enumerate() {
        let local = set
            .score
            .as_deref()
            .map(|s| parse_score(s).unwrap_or(0))
            .unwrap_or(score);
        let m = &set.members;
        let roles = (&set.role, &set.role);
        if local != 0 && parse_bool(set.sequential.as_deref()) != Some(false) {
            let listed = set
                .ordering
                .as_deref()
                .is_some_and(|o| !o.eq_ignore_ascii_case("group"));
            if local > 0 && !listed {
                for w in m.windows(2) {
                    out.push(new(&set.id, local, &w[1], &w[0], roles));
                }
            } else if local > 0 {
                for w in m.windows(2) {
                    out.push(new(&set.id, local, &w[0], &w[1], roles));
                }
            } else {
                for (j, r) in m.iter().enumerate() {
                    // Every member before the first listing of this one.
                    let first = m.iter().position(|x| x == r).unwrap_or(j);
                    for w in &m[..first] {
                        out.push(new(&set.id, local, r, w, roles));
                    }
                }
            }
        }
        if i == 0 || score == 0 {
            continue;
        }
        let earlier = &sets[i - 1];
        let dependents: &[String] = match parse_bool(earlier.sequential.as_deref()) {
            Some(false) => &earlier.members,
            _ => earlier.members.get(..1).unwrap_or(&[]),
        };
        let primaries: &[String] = match parse_bool(set.sequential.as_deref()) {
            Some(false) => m,
            _ => m.last().map(std::slice::from_ref).unwrap_or(&[]),
        };
        for d in dependents {
            for p in primaries {
                out.push(new(id, score, d, p, (&earlier.role, &set.role)));
            }
        }
    }
    out
}

/// An order constraint's kind as Pacemaker reads it (`kind`, else a deprecated `score` of 0 for
/// optional; unknown kinds are mandatory).
fn order_kind(el: &Element) -> String {
    match el.attr("kind").map(str::to_ascii_lowercase) {
        Some(k) if matches!(k.as_str(), "mandatory" | "optional" | "serialize") => k,
        Some(_) => "mandatory".into(),
        None => match el.attr("score").and_then(parse_score) {
            Some(0) => "optional".into(),
            _ => "mandatory".into(),
        },
    }
}

/// Whether an ordering (constraint or set) is symmetrical: its own `symmetrical`, else the
/// parent's, else by kind (Serialize never is).
fn symmetric(el: &Element, parent_kind: &str, parent_symmetrical: Option<&str>) -> bool {
    let kind = if el.attr("kind").is_some() || el.attr("score").is_some() {
        order_kind(el)
    } else {
        parent_kind.to_string()
    };
    let explicit = parse_bool(el.attr("symmetrical")).or(parent_symmetrical.map(is_true));
    explicit.unwrap_or(true) && kind != "serialize"
}

fn invert(action: &str) -> String {
    match action {
        "start" => "stop",
        "stop" => "start",
        "promote" => "demote",
        "demote" => "promote",
        "running" => "stopped",
        "stopped" => "running",
        "promoted" => "demoted",
        "demoted" => "promoted",
        other => other,
    }
    .to_string()
}

/// Orders within and between sets (module doc) for constraint `c`.
pub(crate) fn orders(c: &Element, sets: &[RscSet]) -> Result<Vec<Order>, SetError> {
    let kind = order_kind(c);
    let symmetrical = symmetric(c, &kind, None);
    let new = |first: &str, then: &str, actions: (&str, &str), kind: &str, sym: bool| Order {
        id: c.id().to_string(),
        first: first.to_string(),
        then: then.to_string(),
        first_action: actions.0.to_string(),
        then_action: actions.1.to_string(),
        kind: kind.to_string(),
        symmetrical: Some(sym),
        one_or_more: OneOrMore::No,
    };
    let mut out = Vec::new();
    for (i, set) in sets.iter().enumerate() {
        let action = set.action.as_deref().unwrap_or("start");
        let set_el = set_element(set);
        let local_kind = if set.kind.is_some() {
            order_kind(&set_el)
        } else {
            kind.clone()
        };
        let sym = symmetric(&set_el, &kind, c.attr("symmetrical"));
        let sequential = set.sequential.as_deref().is_none_or(is_true);
        let m = &set.members;
        if m.len() > 1 {
            if local_kind == "serialize" {
                for (a, first) in m.iter().enumerate() {
                    for then in &m[a + 1..] {
                        out.push(new(first, then, (action, action), &local_kind, false));
                    }
                }
                if sym && sequential {
                    let inv = invert(action);
                    for w in m.windows(2) {
                        out.push(new(&w[1], &w[0], (&inv, &inv), &local_kind, false));
                    }
                }
            } else if sequential {
                for w in m.windows(2) {
                    out.push(new(&w[0], &w[1], (action, action), &local_kind, sym));
                }
            }
        }
        if i == 0 {
            continue;
        }
        let earlier = &sets[i - 1];
        let first_action = earlier.action.as_deref().unwrap_or("start");
        let firsts: &[String] = match parse_bool(earlier.sequential.as_deref()) {
            Some(true) => earlier
                .members
                .last()
                .map(std::slice::from_ref)
                .unwrap_or(&[]),
            _ => &earlier.members,
        };
        let thens: &[String] = match parse_bool(set.sequential.as_deref()) {
            Some(true) => m.get(..1).unwrap_or(&[]),
            _ => m,
        };
        // require-all=false on the earlier set (unless its action is a stop or demote) orders
        // every member of it before the one-or-more pseudo action and that before every
        // member of the later set, whatever `sequential` says; the inverse stays ordinary.
        let relaxed = parse_bool(earlier.require_all.as_deref()) == Some(false)
            && !matches!(first_action, "stop" | "demote");
        // (the inverse of a later set with require-all=false whose action is a stop or demote
        // would be one-or-more too: not supported)
        if symmetrical
            && parse_bool(set.require_all.as_deref()) == Some(false)
            && matches!(action, "stop" | "demote")
        {
            return Err(SetError::RequireAll(set.id.clone()));
        }
        if relaxed {
            if first_action != "start" {
                return Err(SetError::RequireAll(earlier.id.clone()));
            }
            let via = OneOrMore::Set(earlier.id.clone());
            for f in &earlier.members {
                for t in m {
                    let mut o = new(f, t, (first_action, action), &kind, false);
                    o.symmetrical = Some(symmetrical && firsts.contains(f) && thens.contains(t));
                    o.one_or_more = via.clone();
                    out.push(o);
                }
            }
            continue;
        }
        for f in firsts {
            for t in thens {
                out.push(new(f, t, (first_action, action), &kind, symmetrical));
            }
        }
    }
    Ok(out)
}

/// The attributes of `set` as an element, for the readers shared with constraints.
fn set_element(set: &RscSet) -> Element {
    let mut el = Element {
        name: "resource_set".into(),
        ..Default::default()
    };
    for (k, v) in [
        ("id", Some(&set.id)),
        ("kind", set.kind.as_ref()),
        ("score", set.score.as_ref()),
        ("symmetrical", set.symmetrical.as_ref()),
    ] {
        if let Some(v) = v {
            el.set_attr(k, v);
        }
    }
    el
}

#[cfg(test)]
mod tests {
    //! Expected values are Pacemaker 2.1.5's rules applied by hand (module doc), not output.
    use crate::cib::{Cib, parse_cib};

    /// A CIB with primitives a..f, x, y, z, tag `t` = [x, y], template `tp` used by x and y.
    fn cib(constraints: &str) -> Cib {
        let prims: String = ["a", "b", "c", "d", "e", "f", "z"]
            .iter()
            .map(|id| {
                format!(r#"<primitive id="{id}" class="ocf" provider="pacemaker" type="Dummy"/>"#)
            })
            .collect();
        parse_cib(&format!(
            r#"<cib><configuration><resources>{prims}
<template id="tp" class="ocf" provider="pacemaker" type="Dummy"/>
<primitive id="x" template="tp"/><primitive id="y" template="tp"/></resources>
<constraints>{constraints}</constraints>
<tags><tag id="t"><obj_ref id="x"/><obj_ref id="y"/><obj_ref id="x"/></tag></tags>
</configuration></cib>"#
        ))
        .expect("valid cib")
    }

    fn colocs(cib: &Cib) -> Vec<(String, String, String, i64)> {
        cib.colocations
            .iter()
            .map(|c| (c.id.clone(), c.rsc.clone(), c.with_rsc.clone(), c.score))
            .collect()
    }

    fn orders(cib: &Cib) -> Vec<(String, String, String, String, Option<bool>)> {
        cib.orders
            .iter()
            .map(|o| {
                (
                    o.first.clone(),
                    o.then.clone(),
                    o.first_action.clone(),
                    o.kind.clone(),
                    o.symmetrical,
                )
            })
            .collect()
    }

    fn c(id: &str, rsc: &str, with: &str, score: i64) -> (String, String, String, i64) {
        (id.into(), rsc.into(), with.into(), score)
    }

    fn o(
        first: &str,
        then: &str,
        kind: &str,
        sym: bool,
    ) -> (String, String, String, String, Option<bool>) {
        (
            first.into(),
            then.into(),
            "start".into(),
            kind.into(),
            Some(sym),
        )
    }

    #[test]
    fn colocation_set_chains_each_member_with_the_one_before() {
        let cib = cib(
            r#"<rsc_colocation id="k" score="INFINITY"><resource_set id="s">
<resource_ref id="a"/><resource_ref id="b"/><resource_ref id="c"/></resource_set></rsc_colocation>"#,
        );
        assert_eq!(
            colocs(&cib),
            [c("s", "b", "a", 1_000_000), c("s", "c", "b", 1_000_000)]
        );
        assert!(cib.diagnostics.is_empty() && cib.config_errors.is_empty());
    }

    #[test]
    fn colocation_set_listed_chains_each_member_with_the_one_after() {
        let cib = cib(
            r#"<rsc_colocation id="k" score="10"><resource_set id="s" ordering="listed">
<resource_ref id="a"/><resource_ref id="b"/><resource_ref id="c"/></resource_set></rsc_colocation>"#,
        );
        assert_eq!(colocs(&cib), [c("s", "a", "b", 10), c("s", "b", "c", 10)]);
    }

    #[test]
    fn negative_colocation_set_keeps_every_member_from_every_earlier_one() {
        let cib = cib(
            r#"<rsc_colocation id="k" score="-INFINITY"><resource_set id="s">
<resource_ref id="a"/><resource_ref id="b"/><resource_ref id="c"/></resource_set></rsc_colocation>"#,
        );
        assert_eq!(
            colocs(&cib),
            [
                c("s", "b", "a", -1_000_000),
                c("s", "c", "a", -1_000_000),
                c("s", "c", "b", -1_000_000)
            ]
        );
    }

    #[test]
    fn colocation_between_sets_puts_the_first_of_the_earlier_with_the_last_of_the_later() {
        let cib = cib(r#"<rsc_colocation id="k" score="100">
<resource_set id="s1"><resource_ref id="a"/><resource_ref id="b"/></resource_set>
<resource_set id="s2" score="5"><resource_ref id="c"/><resource_ref id="d"/></resource_set></rsc_colocation>"#);
        assert_eq!(
            colocs(&cib),
            [
                c("s1", "b", "a", 100),
                c("s2", "d", "c", 5),
                c("k", "a", "d", 100)
            ]
        );
        // sequential=false: no colocation inside the set, and each of its members between sets.
        let cib = super::tests::cib(
            r#"<rsc_colocation id="k" score="100">
<resource_set id="s1" sequential="false"><resource_ref id="a"/><resource_ref id="b"/></resource_set>
<resource_set id="s2" sequential="false"><resource_ref id="c"/><resource_ref id="d"/></resource_set></rsc_colocation>"#,
        );
        assert_eq!(
            colocs(&cib),
            [
                c("k", "a", "c", 100),
                c("k", "a", "d", 100),
                c("k", "b", "c", 100),
                c("k", "b", "d", 100)
            ]
        );
    }

    #[test]
    fn ordered_set_chains_its_members_and_sets_order_all_pairs_unless_sequential() {
        let cib = cib(r#"<rsc_order id="k">
<resource_set id="s1"><resource_ref id="a"/><resource_ref id="b"/></resource_set>
<resource_set id="s2"><resource_ref id="c"/><resource_ref id="d"/></resource_set></rsc_order>"#);
        assert_eq!(
            orders(&cib),
            [
                o("a", "b", "mandatory", true),
                o("c", "d", "mandatory", true),
                o("a", "c", "mandatory", true),
                o("a", "d", "mandatory", true),
                o("b", "c", "mandatory", true),
                o("b", "d", "mandatory", true)
            ]
        );
        let cib = super::tests::cib(
            r#"<rsc_order id="k" symmetrical="false">
<resource_set id="s1" sequential="true"><resource_ref id="a"/><resource_ref id="b"/></resource_set>
<resource_set id="s2" sequential="true"><resource_ref id="c"/><resource_ref id="d"/></resource_set></rsc_order>"#,
        );
        assert_eq!(
            orders(&cib),
            [
                o("a", "b", "mandatory", false),
                o("c", "d", "mandatory", false),
                o("b", "c", "mandatory", false)
            ]
        );
    }

    #[test]
    fn serialized_set_orders_each_member_before_every_later_one_one_way() {
        let cib = cib(
            r#"<rsc_order id="k" kind="Serialize" symmetrical="true"><resource_set id="s">
<resource_ref id="a"/><resource_ref id="b"/><resource_ref id="c"/></resource_set></rsc_order>"#,
        );
        assert_eq!(
            orders(&cib),
            [
                o("a", "b", "serialize", false),
                o("a", "c", "serialize", false),
                o("b", "c", "serialize", false)
            ]
        );
    }

    #[test]
    fn require_all_false_before_another_set_orders_through_one_or_more() {
        use crate::cib::OneOrMore;
        let cib = cib(r#"<rsc_order id="k">
<resource_set id="s1" require-all="false" sequential="true"><resource_ref id="a"/><resource_ref id="b"/></resource_set>
<resource_set id="s2"><resource_ref id="c"/></resource_set></rsc_order>"#);
        assert!(cib.diagnostics.is_empty());
        // The set's own chain, then every member before the pseudo action; only the pair an
        // ordinary ordering would make (last of a sequential set) keeps the inverse.
        assert_eq!(
            orders(&cib),
            [
                o("a", "b", "mandatory", true),
                o("a", "c", "mandatory", false),
                o("b", "c", "mandatory", true)
            ]
        );
        let via: Vec<_> = cib.orders.iter().map(|o| o.one_or_more.clone()).collect();
        assert_eq!(via[0], OneOrMore::No);
        assert_eq!(via[1], OneOrMore::Set("s1".into()));
        assert_eq!(via[2], OneOrMore::Set("s1".into()));
        // On the last set it only concerns the inverse stops, where Pacemaker requires all.
        let cib = super::tests::cib(
            r#"<rsc_order id="k">
<resource_set id="s1"><resource_ref id="a"/></resource_set>
<resource_set id="s2" require-all="false"><resource_ref id="c"/></resource_set></rsc_order>"#,
        );
        assert_eq!(orders(&cib), [o("a", "c", "mandatory", true)]);
        assert!(cib.diagnostics.is_empty());
        // Promotes through one-or-more are refused.
        let cib = super::tests::cib(
            r#"<rsc_order id="k">
<resource_set id="s1" action="promote" require-all="false"><resource_ref id="a"/></resource_set>
<resource_set id="s2"><resource_ref id="c"/></resource_set></rsc_order>"#,
        );
        assert!(cib.orders.is_empty());
        assert_eq!(cib.diagnostics.len(), 1);
        assert!(cib.diagnostics[0].message.contains("s1"));
    }

    #[test]
    fn tags_and_templates_stand_for_their_resources() {
        // A tag named directly becomes a sequential=false set: each member ordered after z.
        let cib = cib(r#"<rsc_order id="k" first="z" then="t"/>"#);
        assert_eq!(
            orders(&cib),
            [
                o("z", "x", "mandatory", true),
                o("z", "y", "mandatory", true)
            ]
        );
        // Colocated with a template: z with each of its primitives.
        let cib =
            super::tests::cib(r#"<rsc_colocation id="k" rsc="z" with-rsc="tp" score="INFINITY"/>"#);
        assert_eq!(
            colocs(&cib),
            [c("k", "z", "x", 1_000_000), c("k", "z", "y", 1_000_000)]
        );
        // Inside a set the tag's members replace it in place (the tag lists x once).
        let cib = super::tests::cib(
            r#"<rsc_colocation id="k" score="INFINITY"><resource_set id="s">
<resource_ref id="a"/><resource_ref id="t"/><resource_ref id="b"/></resource_set></rsc_colocation>"#,
        );
        assert_eq!(
            colocs(&cib),
            [
                c("s", "x", "a", 1_000_000),
                c("s", "y", "x", 1_000_000),
                c("s", "b", "y", 1_000_000)
            ]
        );
        // Location: the role moves with the tag.
        let cib = super::tests::cib(
            r#"<rsc_location id="k" rsc="t" node="n1" score="7" role="Started"/>"#,
        );
        let locs: Vec<(&str, &str, Option<&str>, Option<&str>)> = cib
            .locations
            .iter()
            .map(|l| {
                (
                    l.rsc.as_str(),
                    l.id.as_str(),
                    l.score.as_deref(),
                    l.role.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            locs,
            [
                ("x", "k", Some("7"), Some("Started")),
                ("y", "k", Some("7"), Some("Started"))
            ]
        );
    }

    #[test]
    fn unknown_references_and_two_tags_ignore_the_constraint_as_pacemaker_does() {
        for xml in [
            r#"<rsc_order id="k"><resource_set id="s"><resource_ref id="a"/><resource_ref id="nope"/></resource_set></rsc_order>"#,
            r#"<rsc_colocation id="k" rsc="t" with-rsc="tp" score="INFINITY"/>"#,
            r#"<rsc_location id="k" node="n1" score="1"><resource_set id="s"><resource_ref id="nope"/></resource_set></rsc_location>"#,
        ] {
            let cib = cib(xml);
            assert!(
                cib.orders.is_empty() && cib.colocations.is_empty() && cib.locations.is_empty(),
                "{xml}"
            );
            assert_eq!(cib.config_errors.len(), 1, "{xml}");
            assert_eq!(cib.config_errors[0].id, "k");
            assert!(cib.diagnostics.is_empty(), "{xml}");
        }
    }

    #[test]
    fn a_tag_in_a_loop_is_a_diagnostic_not_a_hang() {
        let cib = parse_cib(
            r#"<cib><configuration><resources><primitive id="a" class="ocf" type="Dummy"/></resources>
<constraints><rsc_location id="k" node="n1" score="1"><resource_set id="s"><resource_ref id="t1"/></resource_set></rsc_location></constraints>
<tags><tag id="t1"><obj_ref id="t2"/></tag><tag id="t2"><obj_ref id="t1"/></tag></tags></configuration></cib>"#,
        )
        .expect("valid");
        assert!(cib.locations.is_empty());
        assert_eq!(cib.diagnostics.len(), 1);
        assert_eq!(cib.diagnostics[0].element, "rsc_location");
    }
}
