//! The daemon over real libqb IPC: a client built on libqb's client API sends what Pacemaker's
//! controller sends (`pe_calc` with a CIB), and the reply is checked against Pacemaker's own
//! scheduler (`crm_simulate -x` on the input the daemon saved). Also: bad messages never kill
//! it, the same input is not saved twice, and only root and hacluster may connect.
//!
//! Needs root (libqb's shared memory for other users, `setpriv` for the refused client) and
//! Pacemaker's `crm_simulate`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use highlander_schedulerd::ffi::Client;
use highlander_schedulerd::{guard, message, series, wire};

const BIN: &str = env!("CARGO_BIN_EXE_highlander-schedulerd");
const BUF: usize = wire::DEFAULT_BUFFER_SIZE as usize;
static SEQ: AtomicUsize = AtomicUsize::new(0);

/// The daemon under test, killed on drop.
struct Daemon {
    child: Child,
    name: String,
    dir: tempfile::TempDir,
}

impl Drop for Daemon {
    /// SIGTERM first, so that the daemon closes its libqb service (and its shared memory files).
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        for _ in 0..250 {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Daemon {
    fn start(mode: &str) -> Daemon {
        Daemon::start_with(mode, Path::new("/usr/sbin/crm_simulate"))
    }

    fn start_with(mode: &str, crm_simulate: &Path) -> Daemon {
        let dir = tempfile::tempdir().expect("tempdir");
        let name = format!(
            "hl-sched-test-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        );
        let child = Command::new(BIN)
            .args(["--name", &name, "--mode", mode, "--state-dir"])
            .arg(dir.path())
            .arg("--logfile")
            .arg(dir.path().join("pacemaker.log"))
            .arg("--crm-simulate")
            .arg(crm_simulate)
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn highlander-schedulerd");
        let d = Daemon { child, name, dir };
        d.connect();
        d
    }

    /// Connects, waiting for the server to come up (readiness, not a timed assertion).
    fn connect(&self) -> Client {
        for _ in 0..500 {
            if let Ok(c) = Client::connect(&self.name, BUF) {
                return c;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("highlander-schedulerd never served '{}'", self.name);
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("pacemaker.log")).unwrap_or_default()
    }
}

fn sample_cib() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cibs/sample-cluster.xml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let start = text.find("<cib").expect("a <cib> element");
    text[start..].trim().to_string()
}

fn pe_calc_xml(reference: &str, cib: &str) -> String {
    format!(
        "<create_request_adv origin=\"do_pe_invoke_callback\" t=\"crmd\" version=\"3.16.1\" subt=\"request\" reference=\"{reference}\" crm_task=\"pe_calc\" crm_sys_to=\"pengine\" crm_sys_from=\"4242_crmd\"><crm_xml>{cib}</crm_xml></create_request_adv>"
    )
}

/// Sends `xml` (compressed when `max_send` is small) asking for an ack; returns ack and reply.
fn pe_calc(c: &Client, id: u32, xml: &str, max_send: u32) -> (message::Request, message::Request) {
    let msg = wire::encode(id, wire::FLAG_CLIENT_RESPONSE, xml, max_send).expect("encode");
    c.send(&msg).expect("send");
    let ack = c.recv_response(BUF, 30_000).expect("ack");
    let ack = message::parse_request(&wire::decode(&ack).expect("ack frame").xml).expect("ack xml");
    let reply = c.recv_event(BUF, 120_000).expect("reply event");
    let frame = wire::decode(&reply).expect("reply frame");
    assert_ne!(
        frame.flags & wire::FLAG_SERVER_EVENT,
        0,
        "the reply is an event"
    );
    (ack, message::parse_request(&frame.xml).expect("reply xml"))
}

fn crm_simulate_graph(input: &Path, scratch: &Path) -> String {
    guard::pacemaker_graph(Path::new("/usr/sbin/crm_simulate"), input, scratch)
        .unwrap_or_else(|e| panic!("crm_simulate on {}: {e}", input.display()))
}

#[test]
fn pe_calc_reply_is_what_the_controller_parses_and_matches_pacemaker() {
    let d = Daemon::start("trusted");
    let c = d.connect();
    let cib = sample_cib();
    let (ack, reply) = pe_calc(
        &c,
        7,
        &pe_calc_xml("pe_calc-crmd-1-0", &cib),
        wire::DEFAULT_BUFFER_SIZE,
    );
    assert_eq!(ack.attr("status"), Some("112"), "ack: {ack:?}");
    assert_eq!(reply.attr("subt"), Some("response"));
    assert_eq!(reply.attr("crm_task"), Some("pe_calc"));
    assert_eq!(reply.attr("reference"), Some("pe_calc-crmd-1-0"));
    assert_eq!(reply.attr("crm_sys_to"), Some("4242_crmd"));
    assert_eq!(reply.attr("graph-errors"), Some("0"));
    let saved = PathBuf::from(reply.attr("crm-tgraph-in").expect("crm-tgraph-in"));
    assert_eq!(saved, d.dir.path().join("pe-input-0.bz2"));
    let saved_xml = series::read_bz2(&saved, 1 << 24).expect("saved input");
    assert!(
        saved_xml.contains(" execution-date=\""),
        "saved input has its execution-date"
    );
    let graph = reply.data.expect("graph in crm_xml");
    assert!(graph.starts_with("<transition_graph") && graph.contains("transition_id=\"0\""));
    // Pacemaker's own scheduler on the input the daemon saved gives the same graph.
    let scratch = tempfile::tempdir().expect("tempdir");
    let pacemaker = crm_simulate_graph(&saved, scratch.path());
    assert_eq!(guard::compare(&pacemaker, &graph), Ok(()));
    assert_eq!(
        std::fs::read_to_string(d.dir.path().join("pe-input.last")).unwrap(),
        "1"
    );
    assert!(
        d.log()
            .contains("Calculated transition 0, saving inputs in"),
        "{}",
        d.log()
    );
}

#[test]
fn same_input_again_is_not_saved_twice_and_compressed_requests_work() {
    let d = Daemon::start("trusted");
    let c = d.connect();
    let xml = pe_calc_xml("pe_calc-crmd-1-1", &sample_cib());
    let packed = wire::encode(1, 0, &xml, 8192).unwrap();
    assert_ne!(
        u32::from_ne_bytes(packed[32..36].try_into().unwrap()) & wire::FLAG_COMPRESSED,
        0
    );
    let (_, first) = pe_calc(&c, 1, &xml, 8192);
    let (_, second) = pe_calc(&c, 2, &xml, wire::DEFAULT_BUFFER_SIZE);
    assert_eq!(first.attr("crm-tgraph-in"), second.attr("crm-tgraph-in"));
    assert!(
        second
            .data
            .as_deref()
            .unwrap_or("")
            .contains("transition_id=\"1\"")
    );
    assert_eq!(
        std::fs::read_to_string(d.dir.path().join("pe-input.last")).unwrap(),
        "1"
    );
}

#[test]
fn malformed_messages_get_an_error_ack_and_the_daemon_goes_on() {
    let mut d = Daemon::start("trusted");
    let c = d.connect();
    let good = wire::encode(
        3,
        wire::FLAG_CLIENT_RESPONSE,
        "<x/>",
        wire::DEFAULT_BUFFER_SIZE,
    )
    .unwrap();
    let mut bad_version = good.clone();
    bad_version[36] = 9;
    let mut oversized = good.clone();
    oversized[24..28].copy_from_slice(&u32::MAX.to_ne_bytes());
    let mut bad_bz2 = good.clone();
    bad_bz2[28..32].copy_from_slice(&4u32.to_ne_bytes());
    let mut truncated = wire::encode(
        3,
        wire::FLAG_CLIENT_RESPONSE,
        &pe_calc_xml("r", "<cib/>"),
        1 << 20,
    )
    .unwrap();
    truncated.truncate(60);
    truncated[8..12].copy_from_slice(&60u32.to_ne_bytes());
    for (what, msg) in [
        ("version", bad_version),
        ("oversized", oversized),
        ("bzip2", bad_bz2),
        ("truncated", truncated),
    ] {
        c.send(&msg)
            .unwrap_or_else(|e| panic!("{what}: send errno {e}"));
        let ack = c
            .recv_response(BUF, 30_000)
            .unwrap_or_else(|e| panic!("{what}: no ack, errno {e}"));
        let ack = message::parse_request(&wire::decode(&ack).unwrap().xml).unwrap();
        assert_eq!(ack.attr("status"), Some("76"), "{what}: {ack:?}");
    }
    // Not XML at all, and a request for someone else.
    for xml in [
        "<<<",
        "<create_request_adv crm_task=\"pe_calc\" crm_sys_to=\"crmd\" subt=\"request\"/>",
    ] {
        c.send(
            &wire::encode(
                4,
                wire::FLAG_CLIENT_RESPONSE,
                xml,
                wire::DEFAULT_BUFFER_SIZE,
            )
            .unwrap(),
        )
        .unwrap();
        c.recv_response(BUF, 30_000).expect("ack");
    }
    assert!(d.alive(), "the daemon died");
    let (_, reply) = pe_calc(
        &c,
        5,
        &pe_calc_xml("after-garbage", &sample_cib()),
        wire::DEFAULT_BUFFER_SIZE,
    );
    assert_eq!(reply.attr("reference"), Some("after-garbage"));
}

#[test]
fn only_root_and_hacluster_may_connect() {
    let d = Daemon::start("trusted");
    let ping = |user: &[&str]| {
        Command::new("setpriv")
            .args(user)
            .arg(BIN)
            .args(["--name", &d.name, "ping"])
            .output()
            .expect("setpriv")
    };
    let root = ping(&["--reuid=0"]);
    assert!(
        root.status.success(),
        "root refused: {}",
        String::from_utf8_lossy(&root.stderr)
    );
    let hacluster = ping(&["--reuid=hacluster", "--regid=haclient", "--clear-groups"]);
    assert!(
        hacluster.status.success(),
        "hacluster refused: {}",
        String::from_utf8_lossy(&hacluster.stderr)
    );
    let nobody = ping(&["--reuid=nobody", "--regid=nogroup", "--clear-groups"]);
    assert!(!nobody.status.success(), "nobody was let in");
    assert!(
        d.log().contains("Refusing IPC connection from uid"),
        "{}",
        d.log()
    );
}

#[test]
fn guarded_mode_checks_with_pacemaker_and_counts() {
    let d = Daemon::start("guarded");
    let c = d.connect();
    let (_, reply) = pe_calc(
        &c,
        1,
        &pe_calc_xml("g-1", &sample_cib()),
        wire::DEFAULT_BUFFER_SIZE,
    );
    assert!(reply.data.is_some());
    let counts =
        std::fs::read_to_string(d.dir.path().join("highlander-schedulerd.counts")).expect("counts");
    assert!(
        counts.contains(
            "mode=guarded\ntransitions=1\nhighlander_plans=1\ndivergences=0\nfallbacks=0"
        ),
        "{counts}"
    );
}

fn counts(d: &Daemon) -> String {
    std::fs::read_to_string(d.dir.path().join("highlander-schedulerd.counts")).expect("counts")
}

#[test]
fn shadow_mode_returns_pacemakers_graph_and_counts_a_fallback() {
    let d = Daemon::start("shadow");
    let c = d.connect();
    let (_, reply) = pe_calc(
        &c,
        1,
        &pe_calc_xml("s-1", &sample_cib()),
        wire::DEFAULT_BUFFER_SIZE,
    );
    let saved = PathBuf::from(reply.attr("crm-tgraph-in").expect("saved"));
    let scratch = tempfile::tempdir().unwrap();
    assert_eq!(
        guard::compare(
            &crm_simulate_graph(&saved, scratch.path()),
            reply.data.as_deref().unwrap()
        ),
        Ok(())
    );
    assert!(
        counts(&d).contains("highlander_plans=0\ndivergences=0\nfallbacks=1"),
        "{}",
        counts(&d)
    );
    assert!(
        d.log().contains("graph from pacemaker (shadow)"),
        "{}",
        d.log()
    );
}

/// A divergence, made real: the guard's crm_simulate (Pacemaker's scheduler, a wrapper adding
/// `--node-fail node2`) answers for another cluster state than pengine plans, so the graphs
/// differ. Pacemaker's graph goes back, the input is kept as pe-diverge-0.bz2 and named.
#[test]
fn a_divergence_returns_pacemakers_graph_and_keeps_the_input() {
    let tools = tempfile::tempdir().unwrap();
    let wrapper = tools.path().join("crm_simulate");
    std::fs::write(
        &wrapper,
        "#!/bin/sh\nexec /usr/sbin/crm_simulate \"$@\" --node-fail node2\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let d = Daemon::start_with("guarded", &wrapper);
    let c = d.connect();
    let (_, reply) = pe_calc(
        &c,
        1,
        &pe_calc_xml("d-1", &sample_cib()),
        wire::DEFAULT_BUFFER_SIZE,
    );
    let kept = d.dir.path().join("pe-diverge-0.bz2");
    assert!(kept.exists(), "no pe-diverge-0.bz2\n{}", d.log());
    let scratch = tempfile::tempdir().unwrap();
    let perturbed = guard::pacemaker_graph(&wrapper, &kept, scratch.path()).unwrap();
    assert_eq!(
        guard::compare(&perturbed, reply.data.as_deref().unwrap()),
        Ok(())
    );
    let pacemaker = crm_simulate_graph(&kept, scratch.path());
    assert!(guard::compare(&pacemaker, reply.data.as_deref().unwrap()).is_err());
    assert!(
        counts(&d).contains("divergences=1\nfallbacks=1"),
        "{}",
        counts(&d)
    );
    assert!(
        d.log()
            .contains(&format!("diverges from Pacemaker's for {}", kept.display())),
        "{}",
        d.log()
    );
}

/// `highlander-schedulerd request --reply` on the sample CIB, run by `program args...`: the
/// reply's root attributes and graph.
fn request_reply(program: &str, args: &[&str]) -> message::Request {
    let out = Command::new(program)
        .args(args)
        .output()
        .expect("run request");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{program} {args:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The reply follows the "reply 0: ..." line; it may span lines.
    let xml = stdout
        .split_once('\n')
        .map(|(_, rest)| rest.trim())
        .expect("a reply");
    message::parse_request(xml).expect("reply XML")
}

/// Starts Pacemaker's scheduler with its inputs in $1, waits for it, asks it ($2 request $3).
const PACEMAKER_SIDE: &str = r#"set -e
mount --bind "$1" /var/lib/pacemaker/pengine
chown hacluster:haclient "$1"
PCMK_logfile=/dev/null /usr/lib/pacemaker/pacemaker-schedulerd &
p=$!
trap 'kill $p' EXIT
for i in $(seq 200); do "$2" --name pengine ping >/dev/null 2>&1 && break; sleep 0.05; done
"$2" --name pengine request "$3" --reply
"#;

/// The other side of the framing: our client against Pacemaker 2.1.5's own
/// pacemaker-schedulerd (in private network and mount namespaces, its inputs in a scratch
/// directory), and its reply next to ours for the same CIB: the same attributes, the same
/// graph.
#[test]
fn replies_match_pacemaker_schedulerd() {
    let scratch = tempfile::tempdir().unwrap();
    let script = scratch.path().join("pacemaker-side.sh");
    std::fs::write(&script, PACEMAKER_SIDE).unwrap();
    let inputs = scratch.path().join("pengine");
    std::fs::create_dir(&inputs).unwrap();
    let cib = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cibs/sample-cluster.xml");
    let (s, i, c) = (
        script.display().to_string(),
        inputs.display().to_string(),
        cib.display().to_string(),
    );
    let pacemaker = request_reply(
        "unshare",
        &[
            "-m",
            "-n",
            "--propagation",
            "private",
            "bash",
            &s,
            &i,
            BIN,
            &c,
        ],
    );
    let d = Daemon::start("trusted");
    let ours = request_reply(BIN, &["--name", &d.name, "request", &c, "--reply"]);
    let names = |r: &message::Request| {
        let mut v: Vec<String> = r.attrs.iter().map(|(k, _)| k.clone()).collect();
        v.sort();
        v
    };
    assert_eq!(names(&ours), names(&pacemaker));
    for a in [
        "t",
        "subt",
        "crm_task",
        "crm_sys_from",
        "graph-errors",
        "graph-warnings",
        "config-errors",
        "config-warnings",
    ] {
        assert_eq!(ours.attr(a), pacemaker.attr(a), "attribute {a}");
    }
    let base = |r: &message::Request| {
        Path::new(r.attr("crm-tgraph-in").unwrap_or(""))
            .file_name()
            .map(|n| n.to_owned())
    };
    assert_eq!(base(&ours), base(&pacemaker));
    assert_eq!(
        guard::compare(
            pacemaker.data.as_deref().unwrap(),
            ours.data.as_deref().unwrap()
        ),
        Ok(())
    );
}
