//! `pengine simulate` with crm_simulate's injections (`-i -F -u -d -f -q -g -r -b -e -O`)
//! against crm_simulate itself (Pacemaker 2.1.5) as the oracle: the same CIB and the same flags must
//! print the same thing, and the CIB written with `-O` must read back (in crm_simulate too) as
//! the revised status.
//!
//! Normalised before comparing: the clock in injected `last-failure-*` values (both tools stamp
//! the wall clock) and the action number in "Pretending action N failed" (graph action ids are
//! ours, not Pacemaker's). Skips loudly without crm_simulate, and panics then when `CI` is set.
//!
//! Also our own small CIBs (`pengine/tests/oracle-cibs/*.xml`, each saying what it exercises):
//! the same allocation scores and transition summary as crm_simulate.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The corpus CIBs kept in the repository (`testdata/`); a checkout without them fails.
fn corpus() -> PathBuf {
    let dir = workspace().join("testdata/pacemaker-2.1.5/xml");
    assert!(dir.is_dir(), "the corpus {} is missing", dir.display());
    dir
}

/// crm_simulate is the oracle: without it these tests cannot look at anything, so they fail.
fn require_crm_simulate() {
    let found = Command::new("crm_simulate")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        found,
        "crm_simulate (Pacemaker 2.1.5) is not installed: the injection oracle needs it (tools/deps.sh)"
    );
}

fn run(program: &str, sub: Option<&str>, cib: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new(program);
    if let Some(s) = sub {
        cmd.arg(s);
    }
    cmd.env("LC_ALL", "C")
        .arg("-x")
        .arg(cib)
        .arg("-S")
        .args(args);
    let out = cmd.output().unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} on {} failed: {}",
        cib.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    // stdout, then stderr (crm_simulate reports a bad injection there).
    format!(
        "{}\n--- stderr\n{}",
        normalise(&String::from_utf8_lossy(&out.stdout)),
        normalise(&String::from_utf8_lossy(&out.stderr))
    )
}

/// Whitespace-insensitive lines, with the clock and our action numbers masked.
fn normalise(text: &str) -> String {
    text.lines()
        .map(|l| {
            let l = l.split_whitespace().collect::<Vec<_>>().join(" ");
            let l = if let Some(rest) = l.strip_prefix("Pretending action ") {
                let tail = rest.split_once(' ').map(|x| x.1).unwrap_or("");
                format!("Pretending action N {tail}")
            } else {
                l
            };
            match l.split_once("=") {
                Some((head, tail)) if head.contains("Injecting attribute last-failure-") => {
                    let tail = tail.split_once(' ').map(|x| x.1).unwrap_or("");
                    format!("{head}=TIME {tail}")
                }
                _ => l,
            }
        })
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn section(text: &str, title: &str) -> String {
    text.lines()
        .skip_while(|l| !l.starts_with(title))
        .skip(1)
        .take_while(|l| (!l.ends_with(':') || l.starts_with("* ")) && !l.starts_with("--- "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// (CIB, flags): every case prints what crm_simulate prints.
fn cases() -> Vec<(PathBuf, Vec<&'static str>)> {
    let sample = workspace().join("examples/cibs/sample-cluster.xml");
    let mut cases = vec![
        // A VM's monitor finds it stopped: recovered in place, the fail count cleared.
        (sample.clone(), vec!["-i", "vm-db_monitor_10000@node2=7"]),
        // A failed start: recovered in place.
        (sample.clone(), vec!["-i", "vm-db_start_0@node2=1"]),
        // A monitor failure on the standby node: moved, no fail-count clear there.
        (sample.clone(), vec!["-i", "vm-web_monitor_10000@node1=1"]),
        // Node changes and a failed start on a node that just came up.
        (
            sample.clone(),
            vec![
                "-u",
                "node3",
                "-d",
                "node2",
                "-f",
                "node1",
                "-i",
                "vm-db_start_0@node3=1",
            ],
        ),
        // An injection naming no configured resource is reported and skipped.
        (sample.clone(), vec!["-i", "vm1_monitor_10000@node1=7"]),
        // The transition's start fails (-F): the transition stops there.
        (
            sample.clone(),
            vec![
                "-i",
                "vm-web_monitor_10000@node1=1",
                "-F",
                "vm-web_start_0@node3=1",
            ],
        ),
        // A node leaves cleanly: its VM is started elsewhere.
        (sample.clone(), vec!["-d", "node2"]),
        // Quorum alone is not applied by crm_simulate 2.1.5; with another injection it is.
        (sample.clone(), vec!["-q", "0"]),
        (sample, vec!["-q", "0", "-u", "node3"]),
    ];
    {
        let dir = corpus();
        for (name, args) in [
            ("simple1", vec!["-i", "rsc1_monitor_0@node1=0"]),
            ("simple1", vec!["-i", "rsc1_start_0@node1=1"]),
            ("simple1", vec!["-F", "rsc1_start_0@node1=1"]),
            ("simple1", vec!["-d", "node1"]),
            ("simple1", vec!["-f", "node1"]),
            ("simple1", vec!["-i", "rsc1_stop_0@node1=1"]),
            ("simple3", vec!["-F", "rsc1_start_0@node1=1"]),
            ("rec-rsc-4", vec!["-i", "rsc1_start_0@node1=1"]),
            ("rec-node-3", vec!["-i", "rsc1_monitor_0@node1=0"]),
            ("rec-node-3", vec!["-f", "node1"]),
            ("migrate-2", vec!["-d", "node1"]),
            ("migrate-2", vec!["-i", "rsc3_stop_0@node1=1"]),
            ("probe-1", vec!["-F", "DcIPaddr_start_0@c001n05=1"]),
            ("probe-1", vec!["-f", "c001n05"]),
            // A CIB with an execution date: crm_simulate says it again after the modifications.
            ("allow-unhealthy-nodes", vec!["-d", "rhel8-3"]),
            // An anonymous clone instance is named by its instance id (pe_find_resource); the
            // cloned primitive's bare id names nothing when no history is named so.
            (
                "clone-anon-failcount",
                vec!["-i", "clnG3dummy02:0_monitor_10000@srv01=1"],
            ),
            (
                "clone-anon-failcount",
                vec!["-i", "clnG3dummy02_monitor_10000@srv01=1"],
            ),
            // Ticket injections: granted, revoked (fence and freeze loss policies), standby.
            ("ticket-primitive-3", vec!["-g", "ticketA"]),
            ("ticket-group-8", vec!["-r", "ticketA"]),
            ("ticket-primitive-22", vec!["-r", "ticketA"]),
            ("ticket-primitive-1", vec!["-b", "ticketA", "-g", "ticketA"]),
            (
                "ticket-group-5",
                vec!["-e", "ticketA", "-r", "ticketB", "-b", "ticketA"],
            ),
        ] {
            cases.push((dir.join(format!("{name}.xml")), args));
        }
    }
    cases
}

#[test]
fn injections_print_what_crm_simulate_prints() {
    require_crm_simulate();
    let pengine = env!("CARGO_BIN_EXE_pengine");
    let mut failures = Vec::new();
    for (cib, args) in cases() {
        let want = run("crm_simulate", None, &cib, &args);
        let got = run(pengine, Some("simulate"), &cib, &args);
        if want != got {
            failures.push(format!(
                "{} {args:?}\n--- crm_simulate\n{want}\n--- pengine\n{got}",
                cib.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn saved_output_reads_back_as_the_revised_status() {
    require_crm_simulate();
    let pengine = env!("CARGO_BIN_EXE_pengine");
    let dir = std::env::temp_dir().join(format!("pengine-inject-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    for (i, (cib, args)) in cases().into_iter().enumerate() {
        let saved = dir.join(format!("out-{i}.xml"));
        let saved_arg = saved.to_str().expect("utf-8 path").to_string();
        let mut with_o: Vec<&str> = args.clone();
        with_o.extend(["-O", &saved_arg]);
        let first = run(pengine, Some("simulate"), &cib, &with_o);
        let revised = section(&first, "Revised Cluster Status:");
        assert!(!revised.is_empty(), "no revised status in {first}");
        // pengine and crm_simulate both read the saved CIB back as that status.
        let ours = run(pengine, Some("simulate"), &saved, &[]);
        assert_eq!(
            section(&ours, "Current cluster status:"),
            revised,
            "pengine re-reading {} {args:?}",
            cib.display()
        );
        let theirs = run("crm_simulate", None, &saved, &[]);
        assert_eq!(
            section(&theirs, "Current cluster status:"),
            revised,
            "crm_simulate reading pengine's -O for {} {args:?}",
            cib.display()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn malformed_specs_are_refused_naming_the_text() {
    let pengine = env!("CARGO_BIN_EXE_pengine");
    let cib = workspace().join("examples/cibs/sample-cluster.xml");
    for bad in [
        "vm-db_monitor@node2=7",
        "vm-db_monitor_10000@node2",
        "x@y=z",
    ] {
        let out = Command::new(pengine)
            .args(["simulate", "-x"])
            .arg(&cib)
            .args(["-S", "-i", bad])
            .output()
            .expect("pengine runs");
        assert_eq!(out.status.code(), Some(1), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(bad), "{bad}: {err}");
    }
}

/// `pcmk__primitive_assign` score lines, sorted (the order resources are assigned in is compared
/// by the corpus run, not here).
fn scores(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.contains(" allocation score on "))
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

#[test]
fn own_cibs_score_and_plan_as_crm_simulate() {
    require_crm_simulate();
    let dir = workspace().join("pengine/tests/oracle-cibs");
    let mut cibs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("pengine/tests/oracle-cibs")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "xml"))
        .collect();
    cibs.sort();
    assert!(!cibs.is_empty(), "no CIBs in {}", dir.display());
    let pengine = env!("CARGO_BIN_EXE_pengine");
    let mut failures = Vec::new();
    for cib in &cibs {
        // Scores and summary from separate runs: with `-s`, crm_simulate prints its status and
        // transition without their headings (so no "Transition Summary:" section to compare).
        let want = run("crm_simulate", None, cib, &["-s"]);
        let got = run(pengine, Some("simulate"), cib, &["-s"]);
        // (with -s crm_simulate prints no section titles: the summary is read from a run
        // without it)
        let want_plan = run("crm_simulate", None, cib, &[]);
        let got_plan = run(pengine, Some("simulate"), cib, &[]);
        assert!(
            want_plan.contains("Transition Summary:"),
            "no summary from crm_simulate for {}",
            cib.display()
        );
        for (what, w, g) in [
            ("scores", scores(&want), scores(&got)),
            (
                "transition summary",
                vec![section(&want_plan, "Transition Summary:")],
                vec![section(&got_plan, "Transition Summary:")],
            ),
        ] {
            if w != g {
                failures.push(format!(
                    "{} ({what})\n--- crm_simulate\n{}\n--- pengine\n{}",
                    cib.display(),
                    w.join("\n"),
                    g.join("\n")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
