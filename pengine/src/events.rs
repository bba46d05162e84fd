//! Events of a cluster's life (a failure, a clean shutdown, a crash, fencing, a join, an evacuation
//! request, a cleanup, time passing) parsed from a command list and written into a CIB, as the
//! controller, the fencer and an administrator would record them. No I/O: "now" is an argument.

use std::fmt;

use crate::cib::{Cib, NvSet, Primitive, ResourceDef};
use crate::simulate::{FailCounting, OpResult, node_state, record_op, score_text};

/// Errors applying or parsing an event, each naming the offending input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EventError {
    /// A line of the event list is not an event.
    #[error("line {line}: cannot parse event '{text}': {why}")]
    Parse {
        /// The line number (from 1).
        line: usize,
        /// The line.
        text: String,
        /// What is wrong with it.
        why: String,
    },
    /// The event names a node the CIB does not have.
    #[error("event '{event}': no node named '{node}' in the CIB")]
    UnknownNode {
        /// The event as written.
        event: String,
        /// The node it names.
        node: String,
    },
    /// The event names a resource the CIB does not have.
    #[error("event '{event}': no resource named '{rsc}' in the CIB")]
    UnknownResource {
        /// The event as written.
        event: String,
        /// The resource it names.
        rsc: String,
    },
    /// The event fails a resource on a node it does not run on.
    #[error("event '{event}': resource '{rsc}' does not run on '{node}'")]
    NotRunning {
        /// The event as written.
        event: String,
        /// The resource it names.
        rsc: String,
        /// The node it names.
        node: String,
    },
    /// The event fails a recurring monitor the resource does not have.
    #[error("event '{event}': resource '{rsc}' has no recurring monitor to fail")]
    NoMonitor {
        /// The event as written.
        event: String,
        /// The resource it names.
        rsc: String,
    },
}

/// Which operation a `fail` event breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOp {
    /// The resource dies now; its recurring monitor reports "not running".
    Monitor,
    /// The next `count` starts on the node fail (`None`: every start, until `repair`).
    Start { count: Option<u32> },
    /// The next `count` stops on the node fail (rc 1): the resource goes on running there.
    Stop { count: Option<u32> },
    /// The next `count` live migrations away from the node fail (`migrate_to` rc 1): the
    /// resource goes on running on the node.
    Migrate { count: Option<u32> },
}

impl FailOp {
    /// The armed operation's task and count (`None` for a monitor failure, which happens now).
    pub fn armed(&self) -> Option<(&'static str, Option<u32>)> {
        match *self {
            FailOp::Monitor => None,
            FailOp::Start { count } => Some(("start", count)),
            FailOp::Stop { count } => Some(("stop", count)),
            FailOp::Migrate { count } => Some(("migrate_to", count)),
        }
    }
}

/// One event of a scenario's command list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Fail {
        rsc: String,
        node: String,
        op: FailOp,
    },
    /// Cancels armed start, stop and migration failures of a resource on a node.
    Repair { rsc: String, node: String },
    /// The next `count` fencing actions against the node fail (`None`: all of them).
    FailFence { node: String, count: Option<u32> },
    /// A clean shutdown request (Pacemaker's `shutdown` node attribute).
    Shutdown { node: String },
    /// The node leaves the membership without shutting down (power loss, kernel panic, partition).
    Crash { node: String },
    /// An administrator confirms the node is down (`stonith_admin --confirm`).
    Fence { node: String },
    /// The node (re)joins the cluster with nothing running and no history.
    Join { node: String },
    /// Virtual time passes.
    Advance { seconds: i64 },
    /// The node-level evacuation request (permanent node attribute `evacuate`).
    Evacuate { node: String },
    /// Withdraws the evacuation request.
    Restore { node: String },
    /// `crm_resource --cleanup` for a resource, on one node or all.
    Cleanup { rsc: String, node: Option<String> },
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Fail { rsc, node, op } => {
                let word = match op {
                    FailOp::Monitor => return write!(f, "fail {rsc} {node} monitor"),
                    FailOp::Start { .. } => "start",
                    FailOp::Stop { .. } => "stop",
                    FailOp::Migrate { .. } => "migrate",
                };
                match op.armed().and_then(|(_, c)| c) {
                    None => write!(f, "fail {rsc} {node} {word} always"),
                    Some(n) => write!(f, "fail {rsc} {node} {word} {n}"),
                }
            }
            Event::FailFence { node, count: None } => write!(f, "fail-fence {node} always"),
            Event::FailFence {
                node,
                count: Some(n),
            } => write!(f, "fail-fence {node} {n}"),
            Event::Repair { rsc, node } => write!(f, "repair {rsc} {node}"),
            Event::Shutdown { node } => write!(f, "shutdown {node}"),
            Event::Crash { node } => write!(f, "crash {node}"),
            Event::Fence { node } => write!(f, "fence {node}"),
            Event::Join { node } => write!(f, "join {node}"),
            Event::Advance { seconds } => write!(f, "advance {seconds}s"),
            Event::Evacuate { node } => write!(f, "evacuate {node}"),
            Event::Restore { node } => write!(f, "restore {node}"),
            Event::Cleanup { rsc, node: None } => write!(f, "cleanup {rsc}"),
            Event::Cleanup { rsc, node: Some(n) } => write!(f, "cleanup {rsc} {n}"),
        }
    }
}

/// Parses a duration such as `600s`, `10m`, `2h` or a plain number of seconds.
pub fn parse_seconds(s: &str) -> Option<i64> {
    let (num, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, "s"),
    };
    let n: i64 = num.parse().ok()?;
    let mult = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// Parses one command line (`#` starts a comment; blank lines give `None`).
pub fn parse_event(line: usize, text: &str) -> Result<Option<Event>, EventError> {
    let body = text.split('#').next().unwrap_or("").trim();
    if body.is_empty() {
        return Ok(None);
    }
    let words: Vec<&str> = body.split_whitespace().collect();
    let err = |why: &str| EventError::Parse {
        line,
        text: body.to_string(),
        why: why.to_string(),
    };
    let node1 = |ctor: fn(String) -> Event| -> Result<Option<Event>, EventError> {
        match words.as_slice() {
            [_, node] => Ok(Some(ctor(node.to_string()))),
            _ => Err(err("expected one node name")),
        }
    };
    match words[0] {
        "fail" => {
            let count = |k: Option<&&str>| -> Result<Option<u32>, EventError> {
                match k {
                    None => Ok(Some(1)),
                    Some(&"always") => Ok(None),
                    Some(k) => k
                        .parse()
                        .map(Some)
                        .map_err(|_| err("failures: a count or 'always'")),
                }
            };
            let (rsc, node, op) = match words.as_slice() {
                [_, r, n, "monitor"] => (r, n, FailOp::Monitor),
                [_, r, n, task, rest @ ..] if rest.len() <= 1 => {
                    let count = count(rest.first())?;
                    let op = match *task {
                        "start" => FailOp::Start { count },
                        "stop" => FailOp::Stop { count },
                        "migrate" => FailOp::Migrate { count },
                        _ => {
                            return Err(err(
                                "expected: fail RSC NODE monitor|start|stop|migrate [N|always]",
                            ));
                        }
                    };
                    (r, n, op)
                }
                _ => {
                    return Err(err(
                        "expected: fail RSC NODE monitor|start|stop|migrate [N|always]",
                    ));
                }
            };
            Ok(Some(Event::Fail {
                rsc: rsc.to_string(),
                node: node.to_string(),
                op,
            }))
        }
        "fail-fence" => {
            let count = match words.as_slice() {
                [_, _] => Some(1),
                [_, _, "always"] => None,
                [_, _, k] => Some(
                    k.parse()
                        .map_err(|_| err("fencing failures: a count or 'always'"))?,
                ),
                _ => return Err(err("expected: fail-fence NODE [N|always]")),
            };
            Ok(Some(Event::FailFence {
                node: words[1].to_string(),
                count,
            }))
        }
        "repair" => match words.as_slice() {
            [_, r, n] => Ok(Some(Event::Repair {
                rsc: r.to_string(),
                node: n.to_string(),
            })),
            _ => Err(err("expected: repair RSC NODE")),
        },
        "shutdown" => node1(|node| Event::Shutdown { node }),
        "crash" => node1(|node| Event::Crash { node }),
        "fence" => node1(|node| Event::Fence { node }),
        "join" => node1(|node| Event::Join { node }),
        "evacuate" => node1(|node| Event::Evacuate { node }),
        "restore" => node1(|node| Event::Restore { node }),
        "advance" => match words.as_slice() {
            [_, d] => {
                let seconds = parse_seconds(d).ok_or_else(|| err("bad duration"))?;
                Ok(Some(Event::Advance { seconds }))
            }
            _ => Err(err("expected: advance DURATION")),
        },
        "cleanup" => match words.as_slice() {
            [_, r] => Ok(Some(Event::Cleanup {
                rsc: r.to_string(),
                node: None,
            })),
            [_, r, n] => Ok(Some(Event::Cleanup {
                rsc: r.to_string(),
                node: Some(n.to_string()),
            })),
            _ => Err(err("expected: cleanup RSC [NODE]")),
        },
        _ => Err(err("unknown event")),
    }
}

/// Parses a whole command list, one event per line.
pub fn parse_cmdlist(text: &str) -> Result<Vec<Event>, EventError> {
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if let Some(e) = parse_event(i + 1, l)? {
            out.push(e);
        }
    }
    Ok(out)
}

/// The configured node `name` as (id, uname).
pub fn node_ids(cib: &Cib, event: &Event, name: &str) -> Result<(String, String), EventError> {
    cib.nodes
        .iter()
        .find(|n| n.uname == name)
        .map(|n| (n.id.clone(), n.uname.clone()))
        .ok_or_else(|| EventError::UnknownNode {
            event: event.to_string(),
            node: name.to_string(),
        })
}

/// The configured primitive `id`, top-level or in a group.
pub fn primitive<'a>(cib: &'a Cib, id: &str) -> Option<&'a Primitive> {
    cib.resources.iter().find_map(|r| match r {
        ResourceDef::Primitive(p) if p.id == id => Some(p),
        ResourceDef::Group(g) => g.members.iter().find(|m| m.id == id),
        _ => None,
    })
}

fn primitive_mut<'a>(cib: &'a mut Cib, id: &str) -> Option<&'a mut Primitive> {
    cib.resources.iter_mut().find_map(|r| match r {
        ResourceDef::Primitive(p) if p.id == id => Some(p),
        ResourceDef::Group(g) => g.members.iter_mut().find(|m| m.id == id),
        _ => None,
    })
}

/// Sets (or with `None` removes) a meta attribute of a primitive, as `crm_resource --meta` does.
/// Returns false when the primitive does not exist.
pub fn set_meta(cib: &mut Cib, rsc: &str, name: &str, value: Option<&str>) -> bool {
    let Some(p) = primitive_mut(cib, rsc) else {
        return false;
    };
    for set in &mut p.meta {
        set.pairs.retain(|(k, _)| k != name);
    }
    if let Some(v) = value {
        if p.meta.is_empty() {
            p.meta.push(NvSet {
                id: format!("{rsc}-meta_attributes"),
                ..Default::default()
            });
        }
        p.meta[0].pairs.push((name.to_string(), v.to_string()));
    }
    true
}

/// Sets (or removes) a permanent node attribute (the `nodes` section, as `crm_attribute -l forever`).
pub fn set_node_attr(cib: &mut Cib, node: &str, name: &str, value: Option<&str>) -> bool {
    let Some(n) = cib.nodes.iter_mut().find(|n| n.uname == node) else {
        return false;
    };
    for set in &mut n.attrs {
        set.pairs.retain(|(k, _)| k != name);
    }
    if let Some(v) = value {
        if n.attrs.is_empty() {
            n.attrs.push(NvSet {
                id: format!("nodes-{}", n.id),
                ..Default::default()
            });
        }
        n.attrs[0].pairs.push((name.to_string(), v.to_string()));
    }
    true
}

/// Removes every fail count and last-failure time of `rsc` on a node (`clear_failcount`).
pub fn clear_failures(cib: &mut Cib, node: &str, rsc: &str) {
    for st in cib.status.iter_mut().filter(|s| s.uname == node) {
        st.attrs.retain(|k, _| {
            let rest = k
                .strip_prefix("fail-count-")
                .or_else(|| k.strip_prefix("last-failure-"));
            rest.map(|r| r.split('#').next() != Some(rsc))
                .unwrap_or(true)
        });
    }
}

/// Marks a node as out of the membership. `clean`: it left as planned, or was fenced (expected
/// down, history and transient attributes erased); otherwise it is lost (expected up, history kept).
pub fn mark_down(cib: &mut Cib, node: (&str, &str), clean: bool) {
    let st = node_state(cib, node.0, node.1);
    st.in_ccm = Some("false".into());
    st.crmd = Some("offline".into());
    if clean {
        st.join = Some("down".into());
        st.expected = Some("down".into());
        st.lrm.clear();
        st.attrs.clear();
    }
}

/// Marks a node as a fresh member: online, nothing known about it yet (it will be probed).
pub fn mark_joined(cib: &mut Cib, node: (&str, &str)) {
    let st = node_state(cib, node.0, node.1);
    st.in_ccm = Some("true".into());
    st.crmd = Some("online".into());
    st.join = Some("member".into());
    st.expected = Some("member".into());
    st.lrm.clear();
    st.attrs.clear();
}

/// The first recurring monitor interval configured for a primitive (Started role).
pub fn monitor_interval_ms(p: &Primitive) -> Option<u64> {
    p.ops
        .iter()
        .filter(|o| o.name == "monitor" && o.interval_ms > 0 && o.enabled)
        .filter(|o| {
            !matches!(
                o.role.as_deref(),
                Some("Stopped") | Some("Promoted") | Some("Master")
            )
        })
        .map(|o| o.interval_ms)
        .next()
}

/// Applies an event's CIB part; returns log lines. Armed failures and repairs change no CIB
/// (the runner arms them), and neither does time.
pub fn apply_event(cib: &mut Cib, event: &Event, now: i64) -> Result<Vec<String>, EventError> {
    let mut log = Vec::new();
    let unknown_rsc = |rsc: &str| EventError::UnknownResource {
        event: event.to_string(),
        rsc: rsc.to_string(),
    };
    match event {
        Event::Fail {
            rsc,
            node,
            op: FailOp::Monitor,
        } => {
            node_ids(cib, event, node)?;
            let p = primitive(cib, rsc).ok_or_else(|| unknown_rsc(rsc))?;
            let interval_ms = monitor_interval_ms(p).ok_or_else(|| EventError::NoMonitor {
                event: event.to_string(),
                rsc: rsc.clone(),
            })?;
            let obs = crate::observed::observe(cib, now);
            let ri = obs.rsc_index(rsc).ok_or_else(|| unknown_rsc(rsc))?;
            let ni = obs
                .node_index(node)
                .ok_or_else(|| EventError::UnknownNode {
                    event: event.to_string(),
                    node: node.clone(),
                })?;
            let op = OpResult {
                task: "monitor",
                interval_ms,
                rc: crate::cib::rc::NOT_RUNNING,
                target_rc: crate::cib::rc::OK,
                when: now,
                migrate: None,
            };
            // The controller records the failed result and counts it (one recorder, one writer
            // of fail counts: `simulate`).
            let count = record_op(cib, &obs, (ri, ni), &op, Some(FailCounting::Controller))
                .map(score_text)
                .unwrap_or_else(|| "unchanged".into());
            log.push(format!(
                "{rsc} monitor on {node} reports not running (fail-count {count})"
            ));
        }
        Event::Fail { rsc, node, .. } | Event::Repair { rsc, node } => {
            node_ids(cib, event, node)?;
            primitive(cib, rsc).ok_or_else(|| unknown_rsc(rsc))?;
        }
        Event::FailFence { node, .. } => {
            node_ids(cib, event, node)?;
        }
        Event::Shutdown { node } => {
            let ids = node_ids(cib, event, node)?;
            node_state(cib, &ids.0, &ids.1)
                .attrs
                .insert("shutdown".into(), now.to_string());
        }
        Event::Crash { node } => {
            let ids = node_ids(cib, event, node)?;
            mark_down(cib, (&ids.0, &ids.1), false);
        }
        Event::Fence { node } => {
            let ids = node_ids(cib, event, node)?;
            mark_down(cib, (&ids.0, &ids.1), true);
        }
        Event::Join { node } => {
            let ids = node_ids(cib, event, node)?;
            mark_joined(cib, (&ids.0, &ids.1));
        }
        Event::Advance { .. } => {}
        Event::Evacuate { node } => {
            node_ids(cib, event, node)?;
            set_node_attr(cib, node, crate::lifecycle::EVACUATE_ATTR, Some("true"));
        }
        Event::Restore { node } => {
            node_ids(cib, event, node)?;
            set_node_attr(cib, node, crate::lifecycle::EVACUATE_ATTR, None);
        }
        Event::Cleanup { rsc, node } => {
            primitive(cib, rsc).ok_or_else(|| unknown_rsc(rsc))?;
            if let Some(n) = node {
                node_ids(cib, event, n)?;
            }
            let names: Vec<String> = cib
                .status
                .iter()
                .filter(|s| node.as_ref().is_none_or(|n| *n == s.uname))
                .map(|s| s.uname.clone())
                .collect();
            for n in &names {
                let had_failure = cib.status.iter().any(|s| {
                    s.uname == *n
                        && s.attrs.keys().any(|k| {
                            k.strip_prefix("fail-count-")
                                .is_some_and(|r| r.split('#').next() == Some(rsc.as_str()))
                        })
                });
                clear_failures(cib, n, rsc);
                // Like crm_resource --cleanup: the history where it failed is erased and re-probed.
                if had_failure {
                    for st in cib.status.iter_mut().filter(|s| s.uname == *n) {
                        st.lrm.retain(|l| l.id != *rsc);
                    }
                }
            }
            // The administrator's acknowledgement also releases a hold from `shutdown-policy=stop`.
            crate::lifecycle::release_stop_hold(cib, rsc);
        }
    }
    Ok(log)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_event_and_round_trips() {
        let text = "fail vm1 node1 monitor\nfail vm1 node2 start always # comment\n\
                    fail vm1 node3 start 2\nrepair vm1 node2\nshutdown node2\ncrash node3\n\
                    fence node3\njoin node2\nadvance 10m\nevacuate node1\nrestore node1\n\
                    cleanup vm1\ncleanup vm1 node1\n\n# only a comment\n\
                    fail vm1 node1 stop\nfail vm1 node2 migrate always\nfail-fence node3 2\n\
                    fail-fence node3 always\n";
        let events = parse_cmdlist(text).expect("parses");
        assert_eq!(events.len(), 17);
        assert_eq!(
            events[16],
            Event::FailFence {
                node: "node3".into(),
                count: None
            }
        );
        assert_eq!(events[8], Event::Advance { seconds: 600 });
        let printed: Vec<String> = events.iter().map(|e| e.to_string()).collect();
        assert_eq!(printed[1], "fail vm1 node2 start always");
        assert_eq!(printed[8], "advance 600s");
        let again = parse_cmdlist(&printed.join("\n")).expect("parses again");
        assert_eq!(again, events);
    }

    #[test]
    fn rejects_bad_lines_with_the_line_number() {
        let e = parse_cmdlist("join node1\nexplode node2\n").unwrap_err();
        assert!(e.to_string().starts_with("line 2:"), "{e}");
        assert!(parse_cmdlist("advance 10parsecs").is_err());
        assert!(parse_cmdlist("fail vm1 node1 promote").is_err());
        assert!(parse_cmdlist("fail vm1 node1 stop twice").is_err());
        assert!(parse_cmdlist("fail-fence node1 2 3").is_err());
        assert!(parse_cmdlist("shutdown").is_err());
    }

    #[test]
    fn seconds_parse_with_units() {
        assert_eq!(parse_seconds("90"), Some(90));
        assert_eq!(parse_seconds("2h"), Some(7200));
        assert_eq!(parse_seconds("x"), None);
        assert_eq!(parse_seconds("9999999999999999999h"), None);
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn parsing_any_text_never_panics(text in "\\PC{0,200}") {
            let _ = super::parse_cmdlist(&text);
        }

        #[test]
        fn parsing_word_soup_never_panics(words in proptest::collection::vec(
            prop_oneof![Just("fail"), Just("start"), Just("monitor"), Just("always"),
                Just("advance"), Just("cleanup"), Just("9999999999999999h"), Just("-1"),
                Just("node1"), Just("#")], 0..6)) {
            let _ = super::parse_cmdlist(&words.join(" "));
        }
    }
}
