//! CIB XML -> typed `Cib` (configuration and status) plus diagnostics naming the element.

use std::collections::BTreeMap;

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

pub mod bundles;
pub mod clones;
pub mod guests;
pub mod rc;
mod sets;
mod templates;
mod tickets;
pub use clones::CloneDef;
pub use tickets::{RscTicket, TicketState, set_ticket_flag};

/// Score value used for INFINITY.
#[allow(missing_docs)] // white-box item of `pengine::unstable`, not API
pub const INFINITY: i64 = 1_000_000;

/// crm_simulate's warning (on stderr, before anything else) for a configuration that turns schema
/// validation off.
pub const SCHEMA_VALIDATION_DISABLED: &str = "Schema validation of configuration is disabled \
     (enabling is encouraged and prevents common misconfigurations)";

/// An error for input that cannot be read as a CIB at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CibError {
    /// The text is not well-formed XML.
    #[error("XML is not well formed near byte {position}: {message}")]
    Xml {
        /// The byte offset the XML reader stopped at.
        position: u64,
        /// What the XML reader said.
        message: String,
    },
    /// The document has no `<cib>` root.
    #[error("document root is <{root}>, expected <cib>")]
    NotCib {
        /// The root element's name.
        root: String,
    },
}

/// A note about input that was ignored or repaired, naming the element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The element's name (`primitive`, `rsc_location`, ...).
    pub element: String,
    /// The element's `id`.
    pub id: String,
    /// The line of the input the element starts on.
    pub line: usize,
    /// What was ignored or repaired, and why.
    pub message: String,
}

/// A generic element kept from the XML, with its line for diagnostics.
#[derive(Debug, Clone, Default)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Element>,
    pub line: usize,
}

#[allow(missing_docs)] // white-box item of `pengine::unstable`, not API
impl Element {
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    pub fn id(&self) -> &str {
        self.attr("id").unwrap_or("")
    }
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> {
        self.children.iter().filter(move |c| c.name == name)
    }
    pub fn set_attr(&mut self, name: &str, value: &str) {
        if let Some(slot) = self.attrs.iter_mut().find(|(k, _)| k == name) {
            slot.1 = value.to_string();
        } else {
            self.attrs.push((name.to_string(), value.to_string()));
        }
    }
}

fn start_element(e: &BytesStart, line: usize) -> Element {
    let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
    let mut attrs = Vec::new();
    for a in e.attributes().flatten() {
        let k = String::from_utf8_lossy(a.key.as_ref()).into_owned();
        let v = a
            .unescape_value()
            .map(|v| v.into_owned())
            .unwrap_or_else(|_| String::from_utf8_lossy(&a.value).into_owned());
        attrs.push((k, v));
    }
    Element {
        name,
        attrs,
        children: Vec::new(),
        line,
    }
}

/// Deepest element nesting accepted: real CIBs stay under 20 levels; the limit keeps the
/// recursive walks (id index, drop) far from the stack's end on hostile input.
pub const MAX_DEPTH: usize = 256;

/// Parses XML text into an element tree.
#[allow(missing_docs)] // white-box item of `pengine::unstable`, not API
pub fn parse_xml(text: &str) -> Result<Element, CibError> {
    let mut reader = Reader::from_str(text);
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    let line_of = |pos: usize| {
        text.as_bytes()[..pos.min(text.len())]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1
    };
    // Track lines incrementally for speed.
    let mut last_pos = 0usize;
    let mut last_line = 1usize;
    loop {
        let pos = reader.buffer_position() as usize;
        let ev = reader.read_event().map_err(|e| CibError::Xml {
            position: reader.buffer_position(),
            message: e.to_string(),
        })?;
        let mut line_at = |p: usize| {
            if p >= last_pos {
                last_line += text.as_bytes()[last_pos..p.min(text.len())]
                    .iter()
                    .filter(|b| **b == b'\n')
                    .count();
                last_pos = p.min(text.len());
                last_line
            } else {
                line_of(p)
            }
        };
        match ev {
            Event::Start(e) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(CibError::Xml {
                        position: pos as u64,
                        message: format!("elements nested deeper than {MAX_DEPTH} levels"),
                    });
                }
                let line = line_at(pos);
                stack.push(start_element(&e, line));
            }
            Event::Empty(e) => {
                let line = line_at(pos);
                let el = start_element(&e, line);
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => root = Some(el),
                }
            }
            Event::End(_) => {
                if let Some(el) = stack.pop() {
                    match stack.last_mut() {
                        Some(parent) => parent.children.push(el),
                        None => root = Some(el),
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !stack.is_empty() {
        return Err(CibError::Xml {
            position: text.len() as u64,
            message: format!("unclosed element <{}>", stack[stack.len() - 1].name),
        });
    }
    root.ok_or(CibError::Xml {
        position: 0,
        message: "empty document".into(),
    })
}

/// Parses a score string ("INFINITY", "-inf", "100").
#[allow(missing_docs)] // white-box item of `pengine::unstable`, not API
pub fn parse_score(s: &str) -> Option<i64> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    match lower.as_str() {
        "infinity" | "+infinity" | "inf" | "+inf" => Some(INFINITY),
        "-infinity" | "-inf" => Some(-INFINITY),
        "red" | "yellow" | "green" => None,
        _ => {
            // Like strtol: a leading integer, the rest ignored ("2.0" is 2).
            let sign_len = usize::from(t.starts_with(['+', '-']));
            let digits = t[sign_len..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .count();
            if digits == 0 {
                return None;
            }
            t[..sign_len + digits]
                .parse::<i64>()
                .ok()
                .map(|v| v.clamp(-INFINITY, INFINITY))
        }
    }
}

/// Pacemaker's boolean spelling.
pub fn is_true(s: &str) -> bool {
    matches!(
        s.to_ascii_lowercase().as_str(),
        "true" | "on" | "yes" | "y" | "1"
    )
}

/// Pacemaker's `crm_str_to_boolean`: a true or false spelling, None for anything else.
pub fn parse_boolean(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "true" | "on" | "yes" | "y" | "1" => Some(true),
        "false" | "off" | "no" | "n" | "0" => Some(false),
        _ => None,
    }
}

/// A set of name/value pairs (meta_attributes, instance_attributes...).
#[derive(Debug, Clone, Default)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub struct NvSet {
    pub id: String,
    pub score: i64,
    pub rules: Vec<Element>,
    pub pairs: Vec<(String, String)>,
}

/// An operation defined on a resource.
#[derive(Debug, Clone, Default)]
pub struct OpDef {
    pub id: String,
    pub name: String,
    pub interval_ms: u64,
    pub role: Option<String>,
    pub attrs: BTreeMap<String, String>,
    pub meta: Vec<NvSet>,
    /// The operation's own `instance_attributes` (extra parameters; also in `meta`).
    pub params: Vec<NvSet>,
    pub enabled: bool,
}

/// A primitive resource.
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
#[derive(Debug, Clone, Default)]
pub struct Primitive {
    pub id: String,
    pub class: String,
    pub provider: Option<String>,
    pub kind: String,
    pub meta: Vec<NvSet>,
    pub params: Vec<NvSet>,
    pub utilization: Vec<NvSet>,
    pub ops: Vec<OpDef>,
    pub line: usize,
}

/// A group of primitives.
#[derive(Debug, Clone, Default)]
pub struct Group {
    pub id: String,
    pub meta: Vec<NvSet>,
    pub members: Vec<Primitive>,
    pub line: usize,
}

/// A member's parameters include its parent's instance attributes, which count only where the
/// member's own sets leave a name unset (Pacemaker unpacks the member's sets, then the parent's
/// without overwriting): the parent's sets go after the member's, ranked below them.
fn inherit_params(p: &mut Primitive, inherited: &[NvSet]) {
    if inherited.is_empty() {
        return;
    }
    let floor = p.params.iter().map(|s| s.score).min();
    let top = inherited.iter().map(|s| s.score).max().unwrap_or(0);
    let shift = floor.map_or(0, |f| f.saturating_sub(top).min(0));
    p.params.extend(inherited.iter().map(|s| NvSet {
        score: s.score.saturating_add(shift),
        ..s.clone()
    }));
}

/// A top-level resource entry.
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
#[derive(Debug, Clone)]
pub enum ResourceDef {
    Primitive(Primitive),
    Group(Group),
    /// An anonymous clone of a primitive (see `cib/clones.rs`).
    Clone(CloneDef),
    /// A bundle and its implicit resources (see `cib/bundles.rs`).
    Bundle(bundles::BundleDef),
}

impl ResourceDef {
    #[allow(missing_docs)] // white-box item of `pengine::unstable`
    pub fn id(&self) -> &str {
        match self {
            ResourceDef::Primitive(p) => &p.id,
            ResourceDef::Group(g) => &g.id,
            ResourceDef::Clone(c) => &c.id,
            ResourceDef::Bundle(b) => &b.id,
        }
    }
}

/// A cluster node from `<nodes>`.
#[derive(Debug, Clone, Default)]
pub struct NodeDef {
    pub id: String,
    pub uname: String,
    pub kind: String,
    /// The node's `score`: where a resource gets a score on the node, it starts from this.
    pub score: i64,
    pub attrs: Vec<NvSet>,
    pub utilization: Vec<NvSet>,
}

/// A location constraint.
#[derive(Debug, Clone, Default)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub struct Location {
    pub id: String,
    pub rsc: String,
    pub node: Option<String>,
    pub score: Option<String>,
    pub role: Option<String>,
    pub rules: Vec<Element>,
    pub discovery: Option<String>,
}

/// A colocation constraint.
#[derive(Debug, Clone, Default)]
pub struct Colocation {
    pub id: String,
    pub rsc: String,
    pub with_rsc: String,
    pub score: i64,
    pub rsc_role: Option<String>,
    pub with_rsc_role: Option<String>,
    pub influence: Option<bool>,
    /// `node-attribute`: colocate on nodes sharing this attribute's value (None: the node).
    pub node_attribute: Option<String>,
}

/// An ordering constraint.
#[derive(Debug, Clone, Default)]
pub struct Order {
    pub id: String,
    pub first: String,
    pub then: String,
    pub first_action: String,
    pub then_action: String,
    pub kind: String,
    pub symmetrical: Option<bool>,
    /// Whether the first side gates the then through a one-or-more pseudo action (see
    /// `crate::one_or_more`).
    pub one_or_more: OneOrMore,
}

/// Where an ordering comes from, as far as Pacemaker's one-or-more orderings care.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum OneOrMore {
    /// Derived from a set, tag or template, or made internally: an ordinary ordering.
    #[default]
    No,
    /// A plain `rsc_order`: one-or-more when its first is a clone with `clone-min`, or when it
    /// says `require-all=false` (the attribute kept here).
    Constraint { require_all: Option<bool> },
    /// Between sets, the earlier one with `require-all=false`: the forward direction goes
    /// through the pseudo action `one-or-more:<set id>`; the inverse is an ordinary ordering
    /// when `symmetrical`.
    Set(String),
}

/// One `lrm_rsc_op` history entry.
#[derive(Debug, Clone, Default)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub struct RscOp {
    pub id: String,
    pub operation: String,
    pub call_id: i64,
    pub rc_code: i32,
    pub op_status: i32,
    pub interval_ms: u64,
    pub transition_key: Option<String>,
    pub last_rc_change: Option<i64>,
    pub migrate_source: Option<String>,
    pub migrate_target: Option<String>,
    pub exit_reason: Option<String>,
    pub element: Element,
}

/// History for one resource on one node.
#[derive(Debug, Clone, Default)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub struct LrmResource {
    pub id: String,
    pub class: String,
    pub provider: Option<String>,
    pub kind: String,
    pub ops: Vec<RscOp>,
    /// The `container` the controller recorded for the resource (a guest node's connection).
    pub container: Option<String>,
    /// `shutdown-lock`: when the resource was locked to this node by its shutdown (seconds since
    /// the epoch; the controller records it with the stop, see `crate::shutdown_lock`).
    pub shutdown_lock: Option<i64>,
}

/// A `node_state` entry.
#[derive(Debug, Clone, Default)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub struct NodeState {
    pub id: String,
    pub uname: String,
    pub in_ccm: Option<String>,
    pub crmd: Option<String>,
    pub join: Option<String>,
    pub expected: Option<String>,
    pub attrs: BTreeMap<String, String>,
    pub lrm: Vec<LrmResource>,
    pub has_lrm: bool,
    /// `node_fenced`: a Pacemaker Remote node's fencing was recorded (see `crate::remote`).
    pub node_fenced: Option<String>,
    /// `node_in_maintenance`: a Pacemaker Remote node's recorded maintenance flag.
    pub node_in_maintenance: Option<String>,
}

/// The typed CIB.
#[derive(Debug, Clone, Default)]
pub struct Cib {
    /// Cluster options of every property set, rules not evaluated (see `option_sets`).
    pub options: BTreeMap<String, String>,
    /// The `cluster_property_set`s in configuration order, for evaluating their rules.
    pub option_sets: Vec<NvSet>,
    /// `<nodes>`: the configured cluster nodes.
    pub nodes: Vec<NodeDef>,
    /// `<resources>`: the configured resources, top level first.
    pub resources: Vec<ResourceDef>,
    /// `<rsc_defaults>`: the resource meta-attribute defaults.
    pub rsc_defaults: Vec<NvSet>,
    /// `<op_defaults>`: the operation defaults.
    pub op_defaults: Vec<NvSet>,
    /// `<rsc_location>` constraints (sets and tags expanded).
    pub locations: Vec<Location>,
    /// `<rsc_colocation>` constraints (sets and tags expanded).
    pub colocations: Vec<Colocation>,
    /// `<rsc_order>` constraints (sets and tags expanded).
    pub orders: Vec<Order>,
    /// `<rsc_ticket>` constraints, one entry per dependent resource (see `cib::tickets`).
    pub rsc_tickets: Vec<RscTicket>,
    /// `<status><tickets>`: the ticket states (a ticket not listed is revoked).
    pub tickets: Vec<TicketState>,
    /// `<status>`: one `node_state` per node, with its operation history.
    pub status: Vec<NodeState>,
    /// The root's `have-quorum`.
    pub have_quorum: bool,
    /// The root's `no-quorum-panic`.
    pub quorum_panic: bool,
    /// The root's `dc-uuid`: the node the controller runs on.
    pub dc_uuid: Option<String>,
    /// The root's `validate-with` (the schema the configuration claims).
    pub validate_with: Option<String>,
    /// The root's `execution-date` (seconds since the epoch): the time crm_simulate plans at
    /// when not told otherwise.
    pub execution_date: Option<i64>,
    /// The root's `crm_feature_set` (for digests of history entries that record none).
    pub feature_set: Option<String>,
    /// Read from a running cluster (`simulate -L`), not a saved file: as for Pacemaker's
    /// scheduler in the cluster (crm_simulate -L clears `pe_flag_sanitized`), a history entry
    /// whose private parameters alone changed is a definition change.
    pub live: bool,
    /// Unfencing is in use (Pacemaker's `enable_unfencing`, found before unpacking): a
    /// `meta_attributes` nvpair anywhere under `resources`, or in `rsc_defaults`, sets
    /// `provides` or `requires` to exactly "unfencing".
    pub unfencing: bool,
    /// Input that was ignored or repaired (the CLI prints these on stderr).
    pub diagnostics: Vec<Diagnostic>,
    /// Configuration errors that Pacemaker also answers by ignoring the element (it logs them;
    /// crm_simulate prints nothing), so the plan is Pacemaker's: a constraint naming something
    /// that is neither a resource nor a tag or template with resources, a colocation of two tags
    /// or templates, a primitive naming a missing template. Not printed by the CLI.
    pub config_errors: Vec<Diagnostic>,
    /// Element ids for id-ref resolution.
    pub unsupported: Vec<String>,
    /// Every resource planned in this migration model (`PlanOptions::migration_model`), as if
    /// its `migration-model` meta-attribute said so.
    pub(crate) migration_model_override: Option<&'static str>,
}

impl Cib {
    /// Whether the configuration turns schema validation off (`validate-with` "none", any case,
    /// or absent): crm_simulate then warns on stderr (see `SCHEMA_VALIDATION_DISABLED`).
    pub fn schema_validation_disabled(&self) -> bool {
        self.validate_with
            .as_deref()
            .is_none_or(|v| v.eq_ignore_ascii_case("none"))
    }

    /// Every configured primitive, group members included, in configuration order.
    pub fn primitives(&self) -> impl Iterator<Item = &Primitive> {
        self.resources
            .iter()
            .flat_map(|r| -> Box<dyn Iterator<Item = &Primitive>> {
                match r {
                    ResourceDef::Primitive(p) => Box::new(std::iter::once(p)),
                    ResourceDef::Group(g) => Box::new(g.members.iter()),
                    ResourceDef::Clone(c) => match &c.group {
                        Some(g) => Box::new(g.members.iter()),
                        None => Box::new(std::iter::once(&c.child)),
                    },
                    ResourceDef::Bundle(b) => Box::new(b.primitives()),
                }
            })
    }
}

fn diag(diags: &mut Vec<Diagnostic>, el: &Element, message: impl Into<String>) {
    diags.push(Diagnostic {
        element: el.name.clone(),
        id: el.id().to_string(),
        line: el.line,
        message: message.into(),
    });
}

/// Collects elements with ids for `id-ref` lookups.
fn index_ids<'a>(el: &'a Element, out: &mut BTreeMap<String, &'a Element>) {
    if let Some(id) = el.attr("id") {
        out.entry(format!("{}:{}", el.name, id)).or_insert(el);
    }
    for c in &el.children {
        index_ids(c, out);
    }
}

struct Ctx<'a> {
    ids: BTreeMap<String, &'a Element>,
}

impl<'a> Ctx<'a> {
    fn resolve<'b>(&self, el: &'b Element) -> &'b Element
    where
        'a: 'b,
    {
        if let Some(r) = el.attr("id-ref") {
            if let Some(found) = self.ids.get(&format!("{}:{}", el.name, r)) {
                return found;
            }
        }
        el
    }

    fn nvset<'b>(&self, el: &'b Element) -> NvSet
    where
        'a: 'b,
    {
        let el = self.resolve(el);
        let mut set = NvSet {
            id: el.id().to_string(),
            score: el.attr("score").and_then(parse_score).unwrap_or(0),
            ..Default::default()
        };
        for c in &el.children {
            match c.name.as_str() {
                "nvpair" => {
                    // A referencing nvpair's own name and value win over the referenced
                    // one's; a pair without a name or a value is ignored.
                    let target = self.resolve(c);
                    let name = c.attr("name").or_else(|| target.attr("name"));
                    let value = c.attr("value").or_else(|| target.attr("value"));
                    if let (Some(n), Some(v)) = (name, value) {
                        set.pairs.push((n.to_string(), v.to_string()));
                    }
                }
                "rule" => set.rules.push(self.resolve(c).clone()),
                _ => {}
            }
        }
        set
    }

    fn sets<'b>(&self, el: &'b Element, name: &str) -> Vec<NvSet>
    where
        'a: 'b,
    {
        el.children_named(name).map(|c| self.nvset(c)).collect()
    }

    fn primitive<'b>(&self, el: &'b Element) -> Primitive
    where
        'a: 'b,
    {
        let mut p = Primitive {
            id: el.id().to_string(),
            class: el.attr("class").unwrap_or("").to_string(),
            provider: el.attr("provider").map(str::to_string),
            kind: el.attr("type").unwrap_or("").to_string(),
            meta: self.sets(el, "meta_attributes"),
            params: self.sets(el, "instance_attributes"),
            utilization: self.sets(el, "utilization"),
            ops: Vec::new(),
            line: el.line,
        };
        // An `operations` element may reference another one's ops (`id-ref`).
        if let Some(ops) = el.child("operations").map(|o| self.resolve(o)) {
            for op in ops.children_named("op") {
                let op = self.resolve(op);
                let interval = op.attr("interval").map(parse_interval_ms).unwrap_or(0);
                let params = self.sets(op, "instance_attributes");
                let mut meta = self.sets(op, "meta_attributes");
                meta.extend(params.iter().cloned());
                p.ops.push(OpDef {
                    id: op.id().to_string(),
                    name: op.attr("name").unwrap_or("").to_string(),
                    interval_ms: interval,
                    role: op.attr("role").map(str::to_string),
                    attrs: op.attrs.iter().cloned().collect(),
                    enabled: op.attr("enabled").map(is_true).unwrap_or(true),
                    meta,
                    params,
                });
            }
        }
        p
    }
}

/// Adds scores saturating at +/- INFINITY, with -INFINITY winning.
pub fn add_score(a: i64, b: i64) -> i64 {
    if a <= -INFINITY || b <= -INFINITY {
        -INFINITY
    } else if a >= INFINITY || b >= INFINITY {
        INFINITY
    } else {
        (a + b).clamp(-INFINITY, INFINITY)
    }
}

/// Parses an interval/duration ("10s", "1min", "PT5M", "5000ms", "10") in milliseconds.
#[allow(missing_docs)] // white-box item of `pengine::unstable`, not API
pub fn parse_interval_ms(s: &str) -> u64 {
    let t = s.trim();
    if let Some(rest) = t.strip_prefix('P').or_else(|| t.strip_prefix('p')) {
        return parse_iso_duration_s(rest)
            .map(|v| v.saturating_mul(1000))
            .unwrap_or(0);
    }
    let digits: String = t.chars().take_while(|c| c.is_ascii_digit()).collect();
    let unit = t[digits.len()..].trim().to_ascii_lowercase();
    let n: u64 = digits.parse().unwrap_or(0);
    match unit.as_str() {
        "" | "s" | "sec" | "secs" | "second" | "seconds" => n.saturating_mul(1000),
        "ms" | "msec" | "msecs" => n,
        "us" | "usec" | "usecs" => n / 1000,
        "m" | "min" | "mins" | "minute" | "minutes" => n.saturating_mul(60_000),
        "h" | "hr" | "hrs" | "hour" | "hours" => n.saturating_mul(3_600_000),
        _ => 0,
    }
}

/// Parses an operation timeout in milliseconds; None when it is not a duration at all (no
/// number first), which Pacemaker replaces by its default timeout.
pub fn parse_timeout_ms(s: &str) -> Option<u64> {
    let t = s.trim();
    let starts_with_number = t.starts_with(|c: char| c.is_ascii_digit());
    let iso = t.starts_with(['P', 'p']);
    (starts_with_number || iso).then(|| parse_interval_ms(t))
}

fn parse_iso_duration_s(s: &str) -> Option<u64> {
    let mut total = 0u64;
    let mut num = String::new();
    let mut in_time = false;
    for c in s.chars() {
        match c {
            'T' | 't' => in_time = true,
            '0'..='9' => num.push(c),
            _ => {
                let n: u64 = num.parse().ok()?;
                num.clear();
                let unit_s: u64 = match (c.to_ascii_uppercase(), in_time) {
                    ('Y', false) => 365 * 86400,
                    ('M', false) => 30 * 86400,
                    ('W', false) => 7 * 86400,
                    ('D', false) => 86400,
                    // 'T' tells minutes from months; hours and seconds need no 'T' ("P30S").
                    ('H', _) => 3600,
                    ('M', true) => 60,
                    ('S', _) => 1,
                    _ => return None,
                };
                total = total.saturating_add(n.saturating_mul(unit_s));
            }
        }
    }
    Some(total)
}

fn parse_i64(s: Option<&str>) -> i64 {
    s.and_then(|v| v.trim().parse::<i64>().ok()).unwrap_or(0)
}

/// Whether a `meta_attributes` child of `el` (at any depth when `deep`) has an nvpair naming
/// `provides` or `requires` with the value "unfencing" (compared exactly, as Pacemaker's XPath
/// does; rules and id-refs are not looked at).
fn declares_unfencing(el: &Element, deep: bool) -> bool {
    el.children.iter().any(|c| {
        let here = c.name == "meta_attributes"
            && c.children_named("nvpair").any(|p| {
                matches!(p.attr("name"), Some("provides" | "requires"))
                    && p.attr("value") == Some("unfencing")
            });
        here || (deep && declares_unfencing(c, true))
    })
}

/// Parses CIB text into a typed `Cib`.
pub fn parse_cib(text: &str) -> Result<Cib, CibError> {
    let root = parse_xml(text)?;
    cib_from_element(&root)
}

/// Builds a typed `Cib` from an element tree.
pub fn cib_from_element(root: &Element) -> Result<Cib, CibError> {
    if root.name != "cib" {
        return Err(CibError::NotCib {
            root: root.name.clone(),
        });
    }
    let mut ids = BTreeMap::new();
    index_ids(root, &mut ids);
    let ctx = Ctx { ids };
    let mut cib = Cib {
        have_quorum: root.attr("have-quorum").map(is_true).unwrap_or(false),
        quorum_panic: root.attr("no-quorum-panic").map(is_true).unwrap_or(false),
        dc_uuid: root.attr("dc-uuid").map(str::to_string),
        validate_with: root.attr("validate-with").map(str::to_string),
        execution_date: root
            .attr("execution-date")
            .and_then(|v| v.trim().parse().ok()),
        feature_set: root.attr("crm_feature_set").map(str::to_string),
        ..Default::default()
    };
    let mut diags = Vec::new();
    let empty = Element::default();
    let config = root.child("configuration").unwrap_or(&empty);
    let mut names = sets::Names::from_configuration(config);
    for section in config.children_named("resources") {
        names.resources.extend(guests::names(section));
    }
    let mut config_errors = Vec::new();
    for section in &config.children {
        match section.name.as_str() {
            "crm_config" => {
                for set in section.children_named("cluster_property_set") {
                    let set = ctx.nvset(set);
                    for (k, v) in &set.pairs {
                        cib.options.entry(k.clone()).or_insert(v.clone());
                    }
                    cib.option_sets.push(set);
                }
            }
            "nodes" => {
                for n in section.children_named("node") {
                    cib.nodes.push(NodeDef {
                        id: n.id().to_string(),
                        uname: n.attr("uname").unwrap_or(n.id()).to_string(),
                        kind: n.attr("type").unwrap_or("member").to_string(),
                        score: n.attr("score").and_then(parse_score).unwrap_or(0),
                        attrs: ctx.sets(n, "instance_attributes"),
                        utilization: ctx.sets(n, "utilization"),
                    });
                }
            }
            "resources" => {
                let templates = templates::collect(section);
                cib.unfencing |= declares_unfencing(section, true);
                // A second resource with an id already seen would be planned as a second
                // instance of the first (two starts): ignored, with a diagnostic.
                let mut seen = std::collections::BTreeSet::new();
                for r in &section.children {
                    if r.name == "template" {
                        continue;
                    }
                    let rsc_ids: Vec<&Element> = std::iter::once(r)
                        .chain(r.children_named("primitive"))
                        .filter(|e| {
                            matches!(
                                e.name.as_str(),
                                "primitive" | "group" | "clone" | "master" | "bundle"
                            )
                        })
                        .collect();
                    if let Some(dup) = rsc_ids.iter().find(|e| seen.contains(e.id())) {
                        diag(
                            &mut diags,
                            dup,
                            format!("duplicate resource id {} ignored", dup.id()),
                        );
                        continue;
                    }
                    seen.extend(rsc_ids.iter().map(|e| e.id().to_string()));
                    match r.name.as_str() {
                        "primitive" => {
                            if let Some(p) =
                                templated_primitive(&ctx, r, &templates, &mut config_errors)
                            {
                                cib.resources.push(ResourceDef::Primitive(p));
                            }
                        }
                        "group" => {
                            let inherited = ctx.sets(r, "instance_attributes");
                            let members = r
                                .children_named("primitive")
                                .filter_map(|p| {
                                    templated_primitive(&ctx, p, &templates, &mut config_errors)
                                })
                                .map(|mut p| {
                                    inherit_params(&mut p, &inherited);
                                    p
                                })
                                .collect();
                            cib.resources.push(ResourceDef::Group(Group {
                                id: r.id().to_string(),
                                meta: ctx.sets(r, "meta_attributes"),
                                members,
                                line: r.line,
                            }));
                        }
                        "clone" | "master" => match clones::parse(
                            r,
                            |p| templated_primitive(&ctx, p, &templates, &mut config_errors),
                            |set| ctx.sets(set, "meta_attributes"),
                        ) {
                            Ok(Some(c)) => cib.resources.push(ResourceDef::Clone(c)),
                            Ok(None) => {}
                            Err(why) => {
                                cib.unsupported.push(format!("clone {}", r.id()));
                                diag(&mut diags, r, why);
                            }
                        },
                        "bundle" => match bundles::parse(
                            r,
                            |p| templated_primitive(&ctx, p, &templates, &mut config_errors),
                            |set| ctx.sets(set, "meta_attributes"),
                        ) {
                            Ok(b) => cib.resources.push(ResourceDef::Bundle(b)),
                            Err(why) => {
                                cib.unsupported.push(format!("bundle {}", r.id()));
                                diag(&mut diags, r, why);
                            }
                        },
                        other => {
                            cib.unsupported.push(format!("{other} {}", r.id()));
                            diag(
                                &mut diags,
                                r,
                                format!("unsupported resource type <{other}> ignored"),
                            );
                        }
                    }
                }
                // Guest nodes' implicit connections come after every configured resource.
                let connections = guests::connections(&cib.resources);
                cib.resources
                    .extend(connections.into_iter().map(ResourceDef::Primitive));
            }
            "rsc_defaults" => {
                cib.rsc_defaults = ctx.sets(section, "meta_attributes");
                cib.unfencing |= declares_unfencing(section, false);
            }
            "op_defaults" => cib.op_defaults = ctx.sets(section, "meta_attributes"),
            "constraints" => {
                for c in &section.children {
                    parse_constraint(&ctx, c, &names, &mut cib, &mut diags, &mut config_errors);
                }
            }
            _ => {}
        }
    }
    tickets::check_references(&cib.rsc_tickets, &cib.resources, &mut diags);
    if let Some(status) = root.child("status") {
        for t in status.children_named("tickets") {
            tickets::parse_ticket_states(t, &mut cib.tickets);
        }
        for ns in status.children_named("node_state") {
            let mut st = NodeState {
                id: ns.id().to_string(),
                uname: ns.attr("uname").unwrap_or(ns.id()).to_string(),
                in_ccm: ns.attr("in_ccm").map(str::to_string),
                crmd: ns.attr("crmd").map(str::to_string),
                join: ns.attr("join").map(str::to_string),
                expected: ns.attr("expected").map(str::to_string),
                node_fenced: ns.attr("node_fenced").map(str::to_string),
                node_in_maintenance: ns.attr("node_in_maintenance").map(str::to_string),
                ..Default::default()
            };
            if let Some(ta) = ns.child("transient_attributes") {
                for set in ta.children_named("instance_attributes") {
                    for (k, v) in ctx.nvset(set).pairs {
                        st.attrs.insert(k, v);
                    }
                }
            }
            if let Some(lrm) = ns.child("lrm") {
                st.has_lrm = true;
                if let Some(lrs) = lrm.child("lrm_resources") {
                    for lr in lrs.children_named("lrm_resource") {
                        let mut res = LrmResource {
                            id: lr.id().to_string(),
                            class: lr.attr("class").unwrap_or("").to_string(),
                            provider: lr.attr("provider").map(str::to_string),
                            kind: lr.attr("type").unwrap_or("").to_string(),
                            ops: Vec::new(),
                            container: lr.attr("container").map(str::to_string),
                            shutdown_lock: lr
                                .attr("shutdown-lock")
                                .and_then(|v| v.trim().parse().ok()),
                        };
                        for op in lr.children_named("lrm_rsc_op") {
                            let Some(operation) = op.attr("operation") else {
                                diag(&mut diags, op, "lrm_rsc_op without operation ignored");
                                continue;
                            };
                            res.ops.push(RscOp {
                                id: op.id().to_string(),
                                operation: operation.to_string(),
                                call_id: parse_i64(op.attr("call-id")),
                                rc_code: parse_i64(op.attr("rc-code")) as i32,
                                op_status: parse_i64(op.attr("op-status")) as i32,
                                interval_ms: op
                                    .attr("interval")
                                    .map(parse_interval_ms_plain)
                                    .unwrap_or(0),
                                transition_key: op.attr("transition-key").map(str::to_string),
                                last_rc_change: op
                                    .attr("last-rc-change")
                                    .or(op.attr("last-run"))
                                    .and_then(|v| v.trim().parse().ok()),
                                migrate_source: op.attr("migrate_source").map(str::to_string),
                                migrate_target: op.attr("migrate_target").map(str::to_string),
                                exit_reason: op.attr("exit-reason").map(str::to_string),
                                element: op.clone(),
                            });
                        }
                        st.lrm.push(res);
                    }
                }
            }
            cib.status.push(st);
        }
    }
    cib.diagnostics = diags;
    cib.config_errors = config_errors;
    Ok(cib)
}

/// History intervals are plain milliseconds.
fn parse_interval_ms_plain(s: &str) -> u64 {
    s.trim().parse().unwrap_or(0)
}

/// A primitive read from its element, expanded from its template first when it names one (see
/// `templates`); `None`, with a configuration error, when the template cannot be used (Pacemaker
/// ignores the resource).
fn templated_primitive(
    ctx: &Ctx,
    el: &Element,
    templates: &BTreeMap<String, &Element>,
    config_errors: &mut Vec<Diagnostic>,
) -> Option<Primitive> {
    match templates::expand(el, templates) {
        Ok(None) => Some(ctx.primitive(el)),
        Ok(Some(expanded)) => Some(ctx.primitive(&expanded)),
        Err(e) => {
            diag(config_errors, el, format!("{e}: resource ignored"));
            None
        }
    }
}

/// Pacemaker's back-references in a location rule matched by `rsc-pattern`: `%N` (N a digit)
/// in an expression's `attribute` (and in the location rule's `score-attribute`) becomes the
/// pattern's Nth submatch; a `%N` without a non-empty submatch stays as written.
fn expand_submatches(el: &mut Element, groups: &[Option<&str>], location_rule: bool) {
    let expand = |text: &str| {
        let mut out = String::with_capacity(text.len());
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            let group = chars
                .peek()
                .and_then(|d| d.to_digit(10))
                .and_then(|i| groups.get(i as usize).copied().flatten())
                .filter(|g| !g.is_empty());
            match (c, group) {
                ('%', Some(g)) => {
                    out.push_str(g);
                    chars.next();
                }
                _ => out.push(c),
            }
        }
        out
    };
    let names: &[&str] = match (el.name.as_str(), location_rule) {
        ("expression", _) => &["attribute"],
        ("rule", true) => &["score-attribute"],
        _ => &[],
    };
    for (k, v) in &mut el.attrs {
        if names.contains(&k.as_str()) {
            *v = expand(v);
        }
    }
    for child in &mut el.children {
        expand_submatches(child, groups, false);
    }
}

fn parse_constraint(
    ctx: &Ctx,
    c: &Element,
    names: &sets::Names,
    cib: &mut Cib,
    diags: &mut Vec<Diagnostic>,
    config_errors: &mut Vec<Diagnostic>,
) {
    let c = ctx.resolve(c);
    // Sets, tags and templates: the pairwise constraints they stand for.
    if sets::expand(ctx, c, names, cib, diags, config_errors) {
        return;
    }
    match c.name.as_str() {
        "rsc_location" => {
            let location = |rsc: &str| Location {
                id: c.id().to_string(),
                rsc: rsc.to_string(),
                node: c.attr("node").map(str::to_string),
                score: c.attr("score").map(str::to_string),
                role: c.attr("role").map(str::to_string),
                rules: c
                    .children_named("rule")
                    .map(|r| ctx.resolve(r).clone())
                    .collect(),
                discovery: c.attr("resource-discovery").map(str::to_string),
            };
            if let Some(rsc) = c.attr("rsc") {
                cib.locations.push(location(rsc));
                return;
            }
            let Some(pattern) = c.attr("rsc-pattern") else {
                diag(
                    diags,
                    c,
                    "rsc_location without rsc, rsc-pattern or resource_set",
                );
                return;
            };
            // rsc-pattern: one location per top-level resource whose id matches (with a leading
            // '!', does not match), in configuration order.
            let (negated, pattern) = match pattern.strip_prefix('!') {
                Some(p) => (true, p),
                None => (false, pattern),
            };
            let re = match regex::Regex::new(pattern) {
                Ok(re) => re,
                Err(e) => {
                    diag(
                        config_errors,
                        c,
                        format!(
                            "rsc-pattern '{pattern}' is not a valid regular expression ({e}): constraint ignored"
                        ),
                    );
                    return;
                }
            };
            let ids: Vec<String> = cib.resources.iter().map(|r| r.id().to_string()).collect();
            for id in ids {
                match (re.captures(&id), negated) {
                    (Some(caps), false) => {
                        // The pattern's submatches (%0..%9) name attributes in the rules.
                        let groups: Vec<Option<&str>> =
                            caps.iter().map(|m| m.map(|m| m.as_str())).collect();
                        let mut loc = location(&id);
                        for rule in &mut loc.rules {
                            expand_submatches(rule, &groups, true);
                        }
                        cib.locations.push(loc);
                    }
                    (None, true) => cib.locations.push(location(&id)),
                    _ => {}
                }
            }
        }
        "rsc_colocation" => {
            let (Some(rsc), Some(with)) = (c.attr("rsc"), c.attr("with-rsc")) else {
                diag(
                    diags,
                    c,
                    "rsc_colocation without rsc/with-rsc not supported",
                );
                return;
            };
            cib.colocations.push(Colocation {
                id: c.id().to_string(),
                rsc: rsc.to_string(),
                with_rsc: with.to_string(),
                score: c.attr("score").and_then(parse_score).unwrap_or(0),
                rsc_role: c.attr("rsc-role").map(str::to_string),
                with_rsc_role: c.attr("with-rsc-role").map(str::to_string),
                // (an invalid value takes the default)
                influence: c.attr("influence").and_then(parse_boolean),
                node_attribute: c.attr("node-attribute").map(str::to_string),
            });
        }
        "rsc_order" => {
            let (Some(first), Some(then)) = (c.attr("first"), c.attr("then")) else {
                diag(diags, c, "rsc_order without first/then not supported");
                return;
            };
            let first_action = c.attr("first-action").unwrap_or("start").to_string();
            let then_action = c.attr("then-action").unwrap_or(&first_action).to_string();
            // An unknown kind is reset to Mandatory (Pacemaker logs a configuration error).
            let kind = match c.attr("kind").map(str::to_ascii_lowercase) {
                Some(k) if matches!(k.as_str(), "mandatory" | "optional" | "serialize") => k,
                Some(_) => "mandatory".into(),
                None => match c.attr("score").and_then(parse_score) {
                    Some(0) => "optional".into(),
                    _ => "mandatory".into(),
                },
            };
            cib.orders.push(Order {
                id: c.id().to_string(),
                first: first.to_string(),
                then: then.to_string(),
                first_action,
                then_action,
                kind,
                symmetrical: c.attr("symmetrical").map(is_true),
                one_or_more: OneOrMore::Constraint {
                    require_all: sets::parse_bool(c.attr("require-all")),
                },
            });
        }
        "rsc_ticket" => tickets::parse_rsc_ticket(ctx, c, names, &mut cib.rsc_tickets, diags),
        other => diag(
            diags,
            c,
            format!("unsupported constraint <{other}> ignored"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_parse_like_pacemaker() {
        for (text, want) in [
            ("INFINITY", Some(INFINITY)),
            ("-INFINITY", Some(-INFINITY)),
            ("+INFINITY", Some(INFINITY)),
            ("100", Some(100)),
            ("-5", Some(-5)),
            ("5000000", Some(INFINITY)),
        ] {
            assert_eq!(parse_score(text), want, "{text}");
        }
    }

    #[test]
    fn intervals_parse_with_units() {
        for (text, want) in [
            ("10s", 10_000),
            ("10", 10_000),
            ("1min", 60_000),
            ("500ms", 500),
            ("PT5M", 300_000),
            ("P30S", 30_000),
            ("P1M", 30 * 86_400_000),
        ] {
            assert_eq!(parse_interval_ms(text), want, "{text}");
        }
    }

    #[test]
    fn timeouts_that_are_no_duration_are_none() {
        assert_eq!(parse_timeout_ms("bad"), None);
        assert_eq!(parse_timeout_ms(""), None);
        assert_eq!(parse_timeout_ms(" 90s"), Some(90_000));
        assert_eq!(parse_timeout_ms("PT1M"), Some(60_000));
        assert_eq!(parse_timeout_ms("0"), Some(0));
    }

    #[test]
    fn nvpair_references_keep_their_own_name_and_drop_valueless_pairs() {
        let cib = parse_cib(
            r#"<cib><configuration><crm_config/><nodes/><resources>
<primitive id="a" class="ocf" provider="pacemaker" type="Dummy"><instance_attributes id="a-ia">
<nvpair id="a-x" name="x" value="1"/><nvpair id="a-empty" name="empty"/></instance_attributes></primitive>
<primitive id="b" class="ocf" provider="pacemaker" type="Dummy"><instance_attributes id="b-ia">
<nvpair id-ref="a-x"/><nvpair id-ref="a-x" name="y"/></instance_attributes></primitive>
</resources><constraints/></configuration><status/></cib>"#,
        )
        .expect("valid");
        let pairs = |i: usize| cib.resources[i].clone();
        let ResourceDef::Primitive(a) = pairs(0) else {
            panic!("a is a primitive")
        };
        let ResourceDef::Primitive(b) = pairs(1) else {
            panic!("b is a primitive")
        };
        assert_eq!(a.params[0].pairs, vec![("x".to_string(), "1".to_string())]);
        assert_eq!(
            b.params[0].pairs,
            vec![
                ("x".to_string(), "1".to_string()),
                ("y".to_string(), "1".to_string())
            ]
        );
    }

    #[test]
    fn malformed_xml_is_an_error_not_a_panic() {
        assert!(parse_cib("<cib><configuration>").is_err());
        assert!(matches!(parse_cib("<foo/>"), Err(CibError::NotCib { .. })));
    }

    #[test]
    fn reads_nodes_resources_and_history() {
        let cib = parse_cib(
            r#"<cib have-quorum="1"><configuration><crm_config/><nodes><node id="n1" uname="node1"/></nodes>
<resources><primitive id="r" class="ocf" provider="heartbeat" type="Dummy"/>
<group id="g"><primitive id="a" class="ocf" provider="pacemaker" type="Dummy"/></group>
<clone id="c"/></resources><constraints/></configuration>
<status><node_state id="n1" uname="node1" in_ccm="true" crmd="online" join="member" expected="member">
<lrm id="n1"><lrm_resources><lrm_resource id="r" class="ocf" type="Dummy">
<lrm_rsc_op id="r_last_0" operation="start" call-id="3" rc-code="0" op-status="0" interval="0"/>
</lrm_resource></lrm_resources></lrm></node_state></status></cib>"#,
        )
        .expect("valid");
        assert_eq!(cib.nodes[0].uname, "node1");
        assert_eq!(cib.resources.len(), 2);
        assert_eq!(cib.status[0].lrm[0].ops[0].call_id, 3);
        assert_eq!(cib.diagnostics.len(), 1);
        assert_eq!(cib.diagnostics[0].id, "c");
        assert_eq!(cib.diagnostics[0].line, 4);
    }

    #[test]
    fn a_guest_node_primitive_gets_its_connection_after_the_configured_resources() {
        let cib = parse_cib(
            r#"<cib><configuration><crm_config/><nodes/><resources>
<primitive id="plain" class="ocf" provider="heartbeat" type="Dummy"/>
<group id="g"><primitive id="vm" class="ocf" provider="heartbeat" type="VirtualDomain">
<meta_attributes id="vm-meta"><nvpair id="vm-rn" name="remote-node" value="guest1"/></meta_attributes>
</primitive></group></resources><constraints/></configuration><status/></cib>"#,
        )
        .expect("valid");
        assert!(cib.diagnostics.is_empty(), "{:?}", cib.diagnostics);
        let ids: Vec<&str> = cib.resources.iter().map(ResourceDef::id).collect();
        assert_eq!(ids, ["plain", "g", "guest1"]);
        let ResourceDef::Primitive(c) = &cib.resources[2] else {
            panic!("the connection is a primitive");
        };
        assert_eq!(c.kind, "remote");
        assert!(c.meta[0].pairs.contains(&("container".into(), "vm".into())));
    }

    #[test]
    fn rsc_pattern_locations_name_each_matching_top_level_resource() {
        let cib = parse_cib(
            r#"<cib><configuration><crm_config/><nodes/><resources>
<primitive id="rsc1" class="ocf" provider="heartbeat" type="Dummy"/>
<primitive id="rsc22" class="ocf" provider="heartbeat" type="Dummy"/>
<group id="grp"><primitive id="rsc3" class="ocf" provider="heartbeat" type="Dummy"/></group>
<primitive id="other" class="ocf" provider="heartbeat" type="Dummy"/>
</resources><constraints>
<rsc_location id="l1" rsc-pattern="^rsc[0-9]$" node="n1" score="10"/>
<rsc_location id="l2" rsc-pattern="!rsc" node="n1" score="20"/>
<rsc_location id="l3" rsc-pattern="rsc[" node="n1" score="30"/>
</constraints></configuration><status/></cib>"#,
        )
        .expect("valid");
        let locs: Vec<(&str, &str)> = cib
            .locations
            .iter()
            .map(|l| (l.id.as_str(), l.rsc.as_str()))
            .collect();
        // Group members are not top-level resources; rsc22 does not match the anchored pattern.
        assert_eq!(locs, [("l1", "rsc1"), ("l2", "grp"), ("l2", "other")]);
        // An invalid pattern is a configuration error naming the constraint, not a panic.
        assert!(
            cib.config_errors
                .iter()
                .any(|d| d.id == "l3" && d.message.contains("rsc-pattern"))
        );
    }
}
