//! crm_simulate's source, operation and artifact flags in `pengine simulate` (`-p`, stdin,
//! `-L`, no operation, `-R`, `-X`, `-I`, `-P`/`-N`), against crm_simulate itself (Pacemaker
//! 2.1.5) as the oracle: the same CIB and flags print the same thing and write CIBs that read
//! back the same. The flags pengine refuses (`-A -c -U -a -w -V`) exit 1 naming themselves.
//!
//! `-L` needs no cluster: both tools read `CIB_file` as the live CIB.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// A corpus CIB kept in the repository; a checkout without it fails.
fn corpus(name: &str) -> PathBuf {
    let path = workspace().join(format!("testdata/pacemaker-2.1.5/xml/{name}.xml"));
    assert!(
        path.is_file(),
        "the corpus CIB {} is missing",
        path.display()
    );
    path
}

fn pengine() -> &'static str {
    env!("CARGO_BIN_EXE_pengine")
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
        "crm_simulate (Pacemaker 2.1.5) is not installed: this oracle needs it (tools/deps.sh)"
    );
}

/// A scratch directory of this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pengine-flags-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// One run of either tool: `pengine simulate ARGS` or `crm_simulate ARGS`.
struct Run<'a> {
    args: Vec<String>,
    stdin: Option<&'a Path>,
    cib_file: Option<&'a Path>,
}

impl<'a> Run<'a> {
    fn new(args: &[&str]) -> Self {
        Run {
            args: args.iter().map(|a| a.to_string()).collect(),
            stdin: None,
            cib_file: None,
        }
    }

    fn x(cib: &Path, args: &[&str]) -> Self {
        let mut all = vec!["-x", cib.to_str().expect("utf-8 path")];
        all.extend(args);
        Run::new(&all)
    }

    /// Runs it; stdout, then stderr, and whether it succeeded.
    fn output(&self, crm: bool) -> (String, String, bool) {
        let mut cmd = if crm {
            Command::new("crm_simulate")
        } else {
            let mut c = Command::new(pengine());
            c.arg("simulate");
            c
        };
        cmd.env("LC_ALL", "C")
            .env_remove("CIB_file")
            .args(&self.args);
        if let Some(file) = self.cib_file {
            cmd.env("CIB_file", file);
        }
        match self.stdin {
            Some(path) => cmd.stdin(std::fs::File::open(path).expect("stdin file")),
            None => cmd.stdin(Stdio::null()),
        };
        let out = cmd.output().expect("the tool runs");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status.success(),
        )
    }

    /// Both tools print the same and succeed; the output.
    fn same(&self) -> String {
        let want = self.output(true);
        let got = self.output(false);
        assert!(want.2, "crm_simulate {:?} failed: {}", self.args, want.1);
        assert!(got.2, "pengine simulate {:?} failed: {}", self.args, got.1);
        assert_eq!(
            format!("{}\n--- stderr\n{}", got.0, got.1),
            format!("{}\n--- stderr\n{}", want.0, want.1),
            "pengine simulate {:?} (left) against crm_simulate (right)",
            self.args
        );
        got.0
    }
}

#[test]
fn without_an_operation_or_with_r_the_status_and_summary_are_crm_simulates() {
    require_crm_simulate();
    for (name, args) in [
        ("simple1", vec![]),
        ("failcount-block", vec![]),
        // Maintenance mode: the banner and its spacer.
        ("probe-pending-node", vec![]),
        ("probe-pending-node", vec!["-R"]),
        ("failcount-block", vec!["-R"]),
        ("utilization-check-allowed-nodes", vec!["-R"]),
        ("migrate-2", vec!["-R", "-d", "node1"]),
        ("ticket-primitive-3", vec!["-R", "-g", "ticketA"]),
        // The execution date said again after the modifications.
        ("allow-unhealthy-nodes", vec!["-d", "rhel8-3"]),
        ("allow-unhealthy-nodes", vec!["-R", "-d", "rhel8-3"]),
        // An injection naming nothing is reported on stderr without -S too.
        ("simple1", vec!["-i", "nothing_monitor_0@node1=0"]),
        // -G plans: the summary is printed.
        ("migrate-2", vec!["-G", "/dev/null"]),
    ] {
        let out = Run::x(&corpus(name), &args).same();
        let planned = args.iter().any(|a| *a == "-R" || *a == "-G");
        assert_eq!(
            out.contains("Transition Summary:"),
            planned,
            "{name} {args:?}"
        );
        assert!(!out.contains("Revised Cluster Status"), "{name} {args:?}");
    }
}

#[test]
fn the_cib_is_read_from_stdin_with_p_or_without_a_source() {
    require_crm_simulate();
    let cib = corpus("migrate-2");
    for args in [vec!["-p", "-S"], vec!["-S", "-d", "node2"], vec!["-R"]] {
        let mut run = Run::new(&args);
        run.stdin = Some(&cib);
        let out = run.same();
        assert!(out.contains("Current cluster status:"), "{args:?}: {out}");
    }
}

#[test]
fn l_reads_the_live_cib_through_cib_file() {
    require_crm_simulate();
    // Private parameters changed in these: the live cluster restarts (crm_simulate -L), a
    // simulation of the file does not, so -L must not read like -x.
    for name in [
        "asymmetrical-order-restart",
        "bug-cl-5247",
        "cancel-behind-moving-remote",
        "remote-recovery",
        "remote-connection-shutdown",
    ] {
        let cib = corpus(name);
        let mut live = Run::new(&["-L", "-R"]);
        live.cib_file = Some(&cib);
        let from_live = live.same();
        let from_file = Run::x(&cib, &["-R"]).output(false).0;
        assert_ne!(from_live, from_file, "{name}: -L read as a saved file");
    }
    for (name, args) in [
        ("migrate-2", vec!["-L", "-S", "-d", "node1"]),
        ("asymmetrical-order-restart", vec!["-L", "-S"]),
        ("simple1", vec!["-L"]),
    ] {
        let cib = corpus(name);
        let mut live = Run::new(&args);
        live.cib_file = Some(&cib);
        live.same();
    }
}

#[test]
fn l_without_a_cib_says_the_query_failed() {
    let missing = scratch("nolive").join("missing.xml");
    let mut live = Run::new(&["-L", "-S"]);
    live.cib_file = Some(&missing);
    let (out, err, ok) = live.output(false);
    assert!(!ok && out.is_empty(), "{out}");
    assert!(err.contains("-L: CIB query failed"), "{err}");
}

/// The status section of `crm_simulate -x CIB`: how Pacemaker reads a saved CIB back.
fn read_back(cib: &Path, args: &[&str]) -> String {
    let (out, err, ok) = Run::x(cib, args).output(true);
    assert!(ok, "crm_simulate cannot read {}: {err}", cib.display());
    out
}

#[test]
fn i_saves_the_input_after_the_injections() {
    require_crm_simulate();
    let dir = scratch("save-input");
    for (name, args) in [
        ("migrate-2", vec!["-d", "node1"]),
        ("simple1", vec!["-u", "node1", "-R"]),
        ("ticket-primitive-3", vec!["-g", "ticketA", "-S"]),
        ("migrate-2", vec!["-i", "rsc3_stop_0@node1=1"]),
    ] {
        let cib = corpus(name);
        let (ours, theirs) = (
            dir.join(format!("{name}-p.xml")),
            dir.join(format!("{name}-c.xml")),
        );
        for (path, crm) in [(&ours, false), (&theirs, true)] {
            let mut all = args.clone();
            all.extend(["-I", path.to_str().expect("utf-8")]);
            let (_, err, ok) = Run::x(&cib, &all).output(crm);
            assert!(ok, "{name} {all:?} (crm_simulate: {crm}): {err}");
        }
        let want = read_back(&theirs, &["-R"]);
        assert_eq!(read_back(&ours, &["-R"]), want, "{name} {args:?}: -I");
        // The injections are in it: the input as read plans otherwise.
        assert_ne!(
            read_back(&cib, &["-R"]),
            want,
            "{name} {args:?}: injections lost"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn x_stores_the_simulated_result_in_the_input_file() {
    require_crm_simulate();
    let dir = scratch("in-place");
    for (name, args) in [("migrate-2", vec!["-d", "node1"]), ("simple3", vec![])] {
        let (ours, theirs) = (
            dir.join(format!("{name}-p.xml")),
            dir.join(format!("{name}-c.xml")),
        );
        let mut outputs = Vec::new();
        for (path, crm) in [(&ours, false), (&theirs, true)] {
            std::fs::copy(corpus(name), path).expect("copy the CIB");
            let (out, err, ok) = Run::x(path, &[&["-X"][..], &args].concat()).output(crm);
            assert!(ok, "{name} -X {args:?} (crm_simulate: {crm}): {err}");
            outputs.push(out);
        }
        assert_eq!(outputs[0], outputs[1], "{name} -X {args:?}: output");
        assert!(
            outputs[0].contains("Revised Cluster Status:"),
            "{}",
            outputs[0]
        );
        let want = read_back(&theirs, &[]);
        assert_eq!(
            read_back(&ours, &[]),
            want,
            "{name} -X {args:?}: stored CIB"
        );
        assert_ne!(
            read_back(&corpus(name), &[]),
            want,
            "{name}: nothing was stored"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn x_without_a_file_or_with_o_is_refused() {
    let cib = corpus("simple1");
    let cib = cib.to_str().expect("utf-8");
    for (args, says) in [
        (vec!["-p", "-X"], "-X/--in-place"),
        (vec!["-L", "-X"], "-X/--in-place"),
        (vec!["-x", cib, "-X", "-O", "/dev/null"], "--save-output"),
    ] {
        let (out, err, ok) = Run::new(&args).output(false);
        assert!(!ok && out.is_empty(), "{args:?}: {out}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// The profile's lines with the time masked.
fn timings(out: &str) -> String {
    out.lines()
        .map(|l| match l.split_once(" ... ") {
            Some((head, _)) => format!("{head} ... T secs"),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn p_profiles_the_xml_files_of_a_directory_in_crm_simulates_order() {
    require_crm_simulate();
    let dir = scratch("profile");
    for name in ["simple1", "simple3", "migrate-2", "rec-node-3"] {
        std::fs::copy(corpus(name), dir.join(format!("{name}.xml"))).expect("copy");
    }
    std::fs::copy(corpus("simple1"), dir.join(".hidden.xml")).expect("copy");
    std::fs::copy(corpus("simple1"), dir.join("simple1.txt")).expect("copy");
    std::fs::create_dir_all(dir.join("sub.xml")).expect("a directory named .xml");
    let dir_arg = dir.to_str().expect("utf-8");
    for args in [vec!["-P", dir_arg], vec!["-P", dir_arg, "-N", "3"]] {
        let run = Run::new(&args);
        let (want, _, ok) = run.output(true);
        assert!(ok, "crm_simulate {args:?}");
        let (got, err, ok) = run.output(false);
        assert!(ok, "pengine {args:?}: {err}");
        assert_eq!(timings(&got), timings(&want), "{args:?}");
        assert_eq!(got.lines().count(), 5, "{got}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn refused_flags_exit_1_naming_the_flag() {
    let cib = corpus("simple1");
    for (flag, name) in [
        (vec!["-A"], "-A/--show-attrs"),
        (vec!["-c"], "-c/--show-failcounts"),
        (vec!["-U"], "-U/--show-utilization"),
        (vec!["-a", "-D", "/dev/null"], "-a/--all-actions"),
        (vec!["-w", "1"], "-w/--watchdog"),
        (vec!["-V"], "-V/--verbose"),
        (vec!["-VV"], "-V/--verbose"),
    ] {
        let mut args = vec!["-S"];
        args.extend(&flag);
        let (out, err, ok) = Run::x(&cib, &args).output(false);
        assert!(!ok, "{flag:?} accepted");
        assert!(out.is_empty(), "{flag:?} printed {out}");
        assert!(
            err.contains(name) && err.contains("refused"),
            "{flag:?}: {err}"
        );
    }
}
