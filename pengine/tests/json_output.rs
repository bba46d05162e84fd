//! `pengine simulate -S --output-as json` carries what the text report says: checked against
//! crm_simulate's own `-S` text (the corpus `.summary` files) on every corpus case whose summary
//! pengine passes, so the JSON is compared with the oracle's text, not with pengine's.

#[allow(dead_code)]
#[path = "conformance/mod.rs"]
mod conformance;

use conformance::corpus;
use conformance::passing;
use conformance::run::Check;
use serde_json::Value;
use std::process::Command;

/// Collapses runs of whitespace, as the conformance summary comparison does.
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The `* ` lines of one titled section of a `-S` report, squashed, without the bullet.
fn section(text: &str, title: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if !line.starts_with(' ') && !line.trim().is_empty() {
            inside = line.trim_end() == title;
            continue;
        }
        if inside {
            if let Some(rest) = line.trim_start().strip_prefix("* ") {
                out.push(squash(rest));
            }
        }
    }
    out
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_default()
}

fn array<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v[key].as_array().map(Vec::as_slice).unwrap_or_default()
}

/// Checks one status block of the JSON against the text's lines of that section.
fn check_status(case: &str, which: &str, json: &Value, lines: &[String]) -> Result<(), String> {
    // Pacemaker Remote nodes are listed apart ("RemoteOnline", "RemoteOFFLINE", "RemoteNode"),
    // guest nodes too ("GuestOnline", "GuestNode"; an offline guest is not listed).
    let listed = |titles: &[&str]| -> Vec<&str> {
        lines
            .iter()
            .filter_map(|l| titles.iter().find_map(|t| l.strip_prefix(t)))
            .flat_map(|l| l.trim_end_matches(" ]").split(' '))
            .collect()
    };
    let nodes = array(json, "nodes");
    if nodes.is_empty() {
        return Err(format!("{case} {which}: no nodes in the JSON"));
    }
    for n in nodes {
        let (name, status) = (text(n, "name"), text(n, "status"));
        let kind = match text(n, "type") {
            "remote" => "Remote",
            "guest" => "Guest",
            _ => "",
        };
        let online = listed(&[format!("{kind}Online: [ ").as_str()]);
        let offline = listed(&[format!("{kind}OFFLINE: [ ").as_str()]);
        let shown = |line: String| lines.contains(&squash(&format!("{kind}{line}")));
        let found = match (status, text(n, "health")) {
            ("online", "green") => online.contains(&name),
            ("OFFLINE", "green") => offline.contains(&name),
            (_, "green") => shown(format!("Node {name}: {status}")),
            (_, health) => shown(format!(
                "Node {name}: {status} (health is {})",
                health.to_ascii_uppercase()
            )),
        };
        if !found {
            return Err(format!(
                "{case} {which}: node {name} '{status}' is not in the text {lines:?}"
            ));
        }
    }
    // Clone instances: the text shows them by node ("Started: [ ... ]", for a promotable clone
    // "Promoted: [ ... ]" and "Unpromoted: [ ... ]") or on a line named by the cloned
    // primitive; every node an instance runs on is on one of those lines.
    let (instances, resources): (Vec<&Value>, Vec<&Value>) = array(json, "resources")
        .iter()
        .partition(|r| !r["clone"].is_null());
    let base = |r: &Value| {
        let id = text(r, "id");
        id.rsplit_once(':').map_or(id, |(b, _)| b).to_string()
    };
    // (a globally unique clone lists each instance under its own id)
    let cloned: Vec<String> = instances
        .iter()
        .flat_map(|r| [base(r), text(r, "id").to_string()])
        .collect();
    for r in &instances {
        let own = format!("{} (", base(r));
        let own_id = format!("{} (", text(r, "id"));
        for node in array(r, "nodes") {
            let node = node.as_str().unwrap_or_default();
            // (an instance active only on a clean offline node is not listed, as Pacemaker's
            // `native_active` has it; an offline guest is not in the node list at all)
            let listed_node = nodes
                .iter()
                .find(|n| text(n, "name") == node)
                .is_some_and(|n| text(n, "status") != "OFFLINE");
            if !listed_node {
                continue;
            }
            let shown = lines.iter().any(|l| {
                ([
                    "Started: [",
                    "Promoted: [",
                    "Unpromoted: [",
                    "Unpromoted (target-role): [",
                ]
                .iter()
                .any(|p| l.starts_with(p))
                    || l.starts_with(&own)
                    || l.starts_with(&own_id))
                    && l.split([' ', '[', ']']).any(|w| w == node)
            });
            if !shown {
                return Err(format!(
                    "{case} {which}: instance {} on {node} is not in the text",
                    text(r, "id")
                ));
            }
        }
    }
    // Bundles: each bundle the JSON's replica lines name has its "Container bundle" header,
    // and the text has no other bundle.
    let mut bundles: Vec<&str> = Vec::new();
    for r in &resources {
        if let Some(b) = r["bundle"].as_str().filter(|b| !bundles.contains(b)) {
            bundles.push(b);
        }
    }
    let headers: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("Container bundle"))
        .collect();
    if headers.len() != bundles.len()
        || bundles
            .iter()
            .any(|b| !headers.iter().any(|h| h.contains(&format!(" {b} ["))))
    {
        return Err(format!(
            "{case} {which}: bundles {bundles:?} in the JSON, {headers:?} in the text"
        ));
    }
    // Primitive lines are `ID (AGENT): STATE ...` (a bundle replica's line `ID (ADDRESS)
    // (AGENT): STATE ...`); group, clone and bundle headers and node lists ("Stopped
    // (disabled): [ ... ]") are not, nor are a clone's instance lines (checked above).
    let primitive_lines: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains(" (") && l.contains("):") && !l.starts_with("Resource Group:"))
        .filter(|l| !l.starts_with("Clone Set:") && !l.starts_with("Container bundle"))
        .filter(|l| !l.contains(": [ "))
        .filter(|l| !cloned.iter().any(|c| l.starts_with(&format!("{c} ("))))
        .collect();
    if resources.len() != primitive_lines.len() {
        return Err(format!(
            "{case} {which}: {} resources in the JSON, {} in the text",
            resources.len(),
            primitive_lines.len()
        ));
    }
    for (r, line) in resources.iter().zip(primitive_lines) {
        let address = match r["ipaddr"].as_str() {
            Some(a) => format!(" ({a})"),
            None => String::new(),
        };
        let head = format!("{}{address} ({}):", text(r, "id"), text(r, "agent"));
        let rest = line
            .strip_prefix(&head)
            .ok_or_else(|| format!("{case} {which}: '{line}' is not {head}"))?;
        let rest = match r["orphan"] == Value::Bool(true) {
            true => rest
                .trim_start()
                .strip_prefix("ORPHANED")
                .ok_or_else(|| format!("{case} {which}: '{line}' is not ORPHANED"))?,
            false => rest,
        };
        let mut words = rest.split(' ').filter(|w| !w.is_empty());
        let state = text(r, "state");
        if words.next() != Some(state) && !(state == "FAILED" && rest.contains("FAILED")) {
            return Err(format!("{case} {which}: '{line}' does not say {state}"));
        }
        for node in array(r, "nodes") {
            let node = node.as_str().unwrap_or_default();
            if !rest.split([' ', '[', ']']).any(|w| w == node) {
                return Err(format!("{case} {which}: '{line}' does not name {node}"));
            }
        }
        if r["failed"] == Value::Bool(true) && !rest.contains("FAILED") {
            return Err(format!("{case} {which}: '{line}' is not FAILED"));
        }
        if r["blocked"] == Value::Bool(true) && !rest.contains("blocked") {
            return Err(format!("{case} {which}: '{line}' is not blocked"));
        }
        if r["managed"] == Value::Bool(false)
            && r["blocked"] != Value::Bool(true)
            && !rest.contains("unmanaged")
        {
            return Err(format!("{case} {which}: '{line}' is not unmanaged"));
        }
    }
    Ok(())
}

fn check_case(name: &str, json: &Value, expected: &str) -> Result<(), String> {
    check_status(
        name,
        "current",
        &json["current"],
        &section(expected, "Current cluster status:"),
    )?;
    check_status(
        name,
        "revised",
        &json["revised"],
        &section(expected, "Revised Cluster Status:"),
    )?;
    let mut transition: Vec<String> = array(&json["transition"], "fencing")
        .iter()
        .map(|f| {
            let reason = text(f, "reason");
            let quoted = if reason.is_empty() {
                String::new()
            } else {
                format!("'{reason}'")
            };
            // (a guest is "fenced" by recovering its container, which the line names)
            let resource = match f["resource"].as_str() {
                Some(r) => format!("(resource: {r}) "),
                None => String::new(),
            };
            squash(&format!(
                "Fence ({}) {} {resource}{quoted}",
                text(f, "action"),
                text(f, "node"),
            ))
        })
        .collect();
    transition.extend(array(&json["transition"], "actions").iter().map(|a| {
        squash(&format!(
            "{} {} ( {} ) {}",
            text(a, "verb"),
            text(a, "rsc"),
            text(a, "details"),
            text(a, "reason")
        ))
    }));
    let expected_transition = section(expected, "Transition Summary:");
    if transition != expected_transition {
        return Err(format!(
            "{name}: transition {transition:?} != text {expected_transition:?}"
        ));
    }
    let executed: Vec<String> = array(json, "executed")
        .iter()
        .map(|a| {
            let node = text(a, "node");
            let (task, rsc) = (text(a, "task"), text(a, "rsc"));
            squash(&match text(a, "kind") {
                "resource" if a["interval_ms"].as_u64().unwrap_or(0) > 0 => format!(
                    "Resource action: {rsc} {task}={} on {node}",
                    a["interval_ms"]
                ),
                "resource" => format!("Resource action: {rsc} {task} on {node}"),
                // (a guest's pseudo fencing names its node)
                "pseudo" if task == "stonith" => {
                    format!("Pseudo action: {} on {node}", text(a, "key"))
                }
                "pseudo" => format!("Pseudo action: {}", text(a, "key")),
                "fence" => format!("Fencing {node} (reboot)"),
                "unfence" => format!("Fencing {node} (on)"),
                _ if !rsc.is_empty() => format!("Cluster action: {task} for {rsc} on {node}"),
                _ => format!("Cluster action: {task} on {node}"),
            })
        })
        .collect();
    let expected_executed = section(expected, "Executing Cluster Transition:");
    if executed != expected_executed {
        return Err(format!(
            "{name}: executed {executed:?} != text {expected_executed:?}"
        ));
    }
    Ok(())
}

#[test]
fn json_says_what_crm_simulate_prints_on_passing_corpus_cases() {
    let dir = corpus::corpus_dir();
    let list_text = std::fs::read_to_string(passing::list_path()).expect("the passing list");
    let list = passing::parse(&list_text).expect("a well-formed passing list");
    let mut checked = 0;
    let mut failures = Vec::new();
    for (name, checks) in &list.cases {
        if !checks.contains(&Check::Summary) {
            continue;
        }
        let xml = dir.join("xml").join(format!("{name}.xml"));
        let expected = std::fs::read_to_string(dir.join("summary").join(format!("{name}.summary")))
            .expect("the corpus summary");
        let out = Command::new(env!("CARGO_BIN_EXE_pengine"))
            .args(["simulate", "-S", "--output-as", "json", "-x"])
            .arg(&xml)
            .env("LC_ALL", "C")
            .output()
            .expect("pengine runs");
        assert!(out.status.success(), "{name}: pengine failed: {out:?}");
        let json: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {out:?}"));
        if let Err(e) = check_case(name, &json, &expected) {
            failures.push(e);
        }
        checked += 1;
    }
    assert!(checked >= 100, "only {checked} passing summary cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn json_disagreeing_with_the_text_is_caught() {
    // The checker itself: a JSON report naming the wrong node fails against the oracle's text.
    let expected = "Current cluster status:\n  * Node List:\n    * Online: [ node1 node2 ]\n\n  * Full List of Resources:\n    * vm\t(ocf:heartbeat:Dummy):\t Started node1\n\nTransition Summary:\n  * Move       vm      ( node1 -> node2 )\n\nExecuting Cluster Transition:\n  * Resource action: vm              stop on node1\n  * Resource action: vm              start on node2\n\nRevised Cluster Status:\n  * Node List:\n    * Online: [ node1 node2 ]\n\n  * Full List of Resources:\n    * vm\t(ocf:heartbeat:Dummy):\t Started node2\n";
    let status = |node: &str| {
        serde_json::json!({
            "nodes": [{"name": "node1", "status": "online", "health": "green"}, {"name": "node2", "status": "online", "health": "green"}],
            "resources": [{"id": "vm", "agent": "ocf:heartbeat:Dummy", "state": "Started", "nodes": [node], "failed": false, "blocked": false}],
        })
    };
    let report = |revised: &str, target: &str| {
        serde_json::json!({
            "current": status("node1"),
            "transition": {"fencing": [], "actions": [{"verb": "Move", "rsc": "vm", "details": format!("node1 -> {target}"), "reason": ""}]},
            "executed": [
                {"kind": "resource", "task": "stop", "rsc": "vm", "node": "node1", "interval_ms": 0},
                {"kind": "resource", "task": "start", "rsc": "vm", "node": "node2", "interval_ms": 0},
            ],
            "revised": status(revised),
        })
    };
    assert_eq!(
        check_case("inline", &report("node2", "node2"), expected),
        Ok(())
    );
    assert!(check_case("inline", &report("node1", "node2"), expected).is_err());
    assert!(check_case("inline", &report("node2", "node3"), expected).is_err());
}

#[test]
fn json_disagreeing_with_a_bundle_line_is_caught() {
    // A bundle replica's line names its connection and address, on its container's node; its
    // guest node is listed as a guest.
    let status = "  * Node List:\n    * Online: [ node1 ]\n    * GuestOnline: [ b-0 ]\n\n  * Full List of Resources:\n    * Container bundle: b [img]:\n      * b-0 (192.168.1.10)\t(ocf:heartbeat:Dummy):\t Started node1\n";
    let expected = format!(
        "Current cluster status:\n{status}\nTransition Summary:\n\nExecuting Cluster Transition:\n\nRevised Cluster Status:\n{status}"
    );
    let report = |edit: &dyn Fn(&mut Value)| {
        let mut status = serde_json::json!({
            "nodes": [
                {"name": "node1", "type": "member", "status": "online", "health": "green"},
                {"name": "b-0", "type": "guest", "status": "online", "health": "green"},
            ],
            "resources": [{"id": "b-0", "agent": "ocf:heartbeat:Dummy", "bundle": "b", "ipaddr": "192.168.1.10", "state": "Started", "nodes": ["node1"], "failed": false, "managed": true, "blocked": false}],
        });
        let revised = status.clone();
        edit(&mut status);
        serde_json::json!({
            "current": status,
            "transition": {"fencing": [], "actions": []},
            "executed": [],
            "revised": revised,
        })
    };
    assert_eq!(check_case("bundle", &report(&|_| ()), &expected), Ok(()));
    let wrong: [&dyn Fn(&mut Value); 6] = [
        &|s| s["resources"][0]["state"] = "Stopped".into(),
        &|s| s["resources"][0]["ipaddr"] = "192.168.1.11".into(),
        &|s| s["resources"][0]["bundle"] = Value::Null,
        &|s| s["resources"][0]["nodes"][0] = "node2".into(),
        &|s| s["resources"][0]["managed"] = false.into(),
        &|s| s["nodes"][1]["type"] = "member".into(),
    ];
    for edit in wrong {
        assert!(check_case("bundle", &report(edit), &expected).is_err());
    }
}

#[test]
fn json_reports_the_injections_the_text_reports() {
    let dir = corpus::corpus_dir();
    let xml = dir.join("xml").join("migrate-1.xml");
    let flags = [
        "-i",
        "rsc3_monitor_10000@node1=7",
        "-F",
        "rsc3_start_0@node2=1",
        "-u",
        "node2",
    ];
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_pengine"))
            .args(["simulate", "-S", "-x"])
            .arg(&xml)
            .args(flags)
            .args(extra)
            .env("LC_ALL", "C")
            .output()
            .expect("pengine runs");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let report = run(&[]);
    let json: Value = serde_json::from_str(&run(&["--output-as", "json"])).expect("JSON");
    // The modifications are the text's lines of that section, in order (the two runs may stamp
    // last-failure a second apart: clock values are masked).
    let mask = |l: &str| -> String {
        let mut out = String::new();
        let mut run = String::new();
        for c in l.chars().chain(std::iter::once(' ')) {
            if c.is_ascii_digit() {
                run.push(c);
                continue;
            }
            out.push_str(if run.len() > 8 { "<clock>" } else { &run });
            run.clear();
            out.push(c);
        }
        out.trim_end().to_string()
    };
    let modifications: Vec<String> = array(&json, "modifications")
        .iter()
        .map(|m| mask(&squash(m.as_str().unwrap_or_default())))
        .collect();
    let expected: Vec<String> = section(&report, "Performing Requested Modifications:")
        .iter()
        .map(|l| mask(l))
        .collect();
    assert!(!expected.is_empty(), "{report}");
    assert_eq!(modifications, expected, "{report}");
    // The injections are the flags given, in crm_simulate's order (-u before -i).
    let injections: Vec<(String, String)> = array(&json, "injections")
        .iter()
        .map(|i| (text(i, "kind").to_string(), text(i, "node").to_string()))
        .collect();
    assert_eq!(
        injections,
        [
            ("node-up".to_string(), "node2".to_string()),
            ("op".to_string(), "node1".to_string())
        ]
    );
    let op = &array(&json, "injections")[1];
    assert_eq!(
        (
            text(op, "rsc"),
            text(op, "task"),
            &op["interval_ms"],
            &op["rc"]
        ),
        ("rsc3", "monitor", &Value::from(10000), &Value::from(7))
    );
    let fail = &array(&json, "op_fail")[0];
    assert_eq!((text(fail, "rsc"), &fail["rc"]), ("rsc3", &Value::from(1)));
    // Every "Pretending action N failed with rc=RC" line is one executed action with that rc.
    let pretended: Vec<i64> = report
        .lines()
        .filter_map(|l| l.strip_prefix("Pretending action "))
        .filter_map(|l| {
            l.rsplit_once("rc=")
                .and_then(|(_, rc)| rc.trim().parse().ok())
        })
        .collect();
    let failed: Vec<i64> = array(&json, "executed")
        .iter()
        .filter_map(|a| a["failed_rc"].as_i64())
        .collect();
    assert!(!pretended.is_empty(), "{report}");
    assert_eq!(failed, pretended, "{report}");
}
